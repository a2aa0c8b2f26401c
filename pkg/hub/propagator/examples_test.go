package propagator_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/testenv"
)

// TestExamples applies examples/propagation as a new user would and checks
// what it promises: replicas of both policies on the dev clusters, the
// dependency renamed to the replica's name, enforce on canary clusters.
func TestExamples(t *testing.T) {
	g := NewWithT(t)
	root, err := testenv.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	files, err := filepath.Glob(filepath.Join(root, "examples", "propagation", "0*.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(files).NotTo(BeEmpty())
	for _, f := range files {
		for _, obj := range readObjects(t, f) {
			err := env.Hub.Client.Create(t.Context(), obj)
			g.Expect(client.IgnoreAlreadyExists(err)).To(Succeed(), "%s: %s %s", filepath.Base(f), obj.GetKind(), obj.GetName())
		}
	}
	placeOn(t, "policies", "dev-clusters", "cluster-a", "cluster-b")
	placeOn(t, "policies", "canary-clusters", "cluster-b", "cluster-c")

	expectReplicasOn(t, "policies", "require-team-namespace", "cluster-a", "cluster-b")
	expectReplicasOn(t, "policies", "team-a-quota", "cluster-a", "cluster-b")
	g.Eventually(func(g Gomega) {
		quota := getReplica(g, t.Context(), "cluster-a", "policies", "team-a-quota")
		g.Expect(quota.Spec.Dependencies).To(ConsistOf(HaveField("Name", "policies.require-team-namespace")))
		g.Expect(quota.Spec.RemediationAction).To(Equal(policyv1.RemediationAction("inform")))
		canary := getReplica(g, t.Context(), "cluster-b", "policies", "team-a-quota")
		g.Expect(canary.Spec.RemediationAction).To(Equal(policyv1.RemediationAction("enforce")))
	}).Should(Succeed())
}

// readObjects decodes the YAML documents of a file.
func readObjects(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		err := dec.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			return objs
		}
		NewWithT(t).Expect(err).NotTo(HaveOccurred(), path)
		if len(obj.Object) > 0 {
			objs = append(objs, obj)
		}
	}
}
