package ops_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Kinds of the objects the health checks assess.
var (
	policyGVK              = schema.GroupVersionKind{Group: "policy.open-cluster-management.io", Version: "v1", Kind: "Policy"}
	policySetGVK           = schema.GroupVersionKind{Group: "policy.open-cluster-management.io", Version: "v1beta1", Kind: "PolicySet"}
	configurationPolicyGVK = schema.GroupVersionKind{Group: "policy.open-cluster-management.io", Version: "v1", Kind: "ConfigurationPolicy"}
	operatorPolicyGVK      = schema.GroupVersionKind{Group: "policy.open-cluster-management.io", Version: "v1beta1", Kind: "OperatorPolicy"}
)

// settledFleet starts the fleet and waits until every placed root policy
// and policy set of testdata/fleet.yaml reports the compliance it is there
// for, and the rollout of rollout-stopped has stopped.
func settledFleet(t *testing.T) {
	t.Helper()
	suite.Get(t)
	g := NewWithT(t)
	want := map[schema.GroupVersionKind]map[string]string{
		policyGVK: {"compliant": "Compliant", "noncompliant": "NonCompliant", "pending": "Pending",
			"operator": "Compliant", "operator-missing": "NonCompliant", "hub-template-error": "NonCompliant"},
		policySetGVK: {"compliant-set": "Compliant", "noncompliant-set": "NonCompliant", "pending-set": "Pending"},
	}
	g.Eventually(func(g Gomega) {
		obj := get(t.Context(), g, env.Hub.Client, policyGVK, fleetNamespace, "rollout-stopped")
		phase, _, _ := unstructured.NestedString(obj.Object, "status", "rollout", "phase")
		g.Expect(phase).To(Equal("Stopped"))
	}, eventually, poll).Should(Succeed())
	for gvk, names := range want {
		for name, compliance := range names {
			g.Eventually(func(g Gomega) {
				obj := get(t.Context(), g, env.Hub.Client, gvk, fleetNamespace, name)
				got, _, _ := unstructured.NestedString(obj.Object, "status", "compliant")
				g.Expect(got).To(Equal(compliance), "%s %s", gvk.Kind, name)
			}, eventually, poll).Should(Succeed())
		}
	}
}

// get reads one object from the API server of c.
func get(ctx context.Context, g Gomega, c client.Client, gvk schema.GroupVersionKind, namespace, name string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj)).To(Succeed())
	return obj
}

// list reads the objects of one kind in namespace from the API server of c.
func list(ctx context.Context, g Gomega, c client.Client, gvk schema.GroupVersionKind, namespace string) []unstructured.Unstructured {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	g.Expect(c.List(ctx, l, client.InNamespace(namespace))).To(Succeed())
	return l.Items
}
