package e2e

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive // ginkgo's DSL reads best unqualified
	. "github.com/onsi/gomega"    //nolint:revive // gomega's DSL reads best unqualified
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CreateNamespace creates a namespace with a random suffix, deleted when the
// current spec ends.
func CreateNamespace(ctx context.Context, c client.Client, prefix string) string {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	Expect(c.Create(ctx, ns)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(c.Delete(ctx, ns))).To(Succeed())
	}, NodeTimeout(30*time.Second))
	return ns.Name
}

// BeForbidden succeeds for an API error with reason Forbidden.
func BeForbidden() OmegaMatcher {
	return Satisfy(apierrors.IsForbidden)
}

// decodeInto decodes the YAML or JSON documents of text (empty ones left
// out) into objects of namespace ns.
func decodeInto(text, ns string) []*unstructured.Unstructured {
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(text), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			return objs
		}
		if len(u.Object) > 0 {
			u.SetNamespace(ns)
			objs = append(objs, u)
		}
	}
}

// asObjects is objs as client.Objects.
func asObjects(objs []*unstructured.Unstructured) []client.Object {
	out := make([]client.Object, len(objs))
	for i, o := range objs {
		out[i] = o
	}
	return out
}
