package propagator_test

import (
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
)

// TestExamples applies examples/propagation as a new user would and checks
// what it promises: replicas of both policies on the dev clusters, the
// dependency renamed to the replica's name, enforce on canary clusters.
func TestExamples(t *testing.T) {
	g := NewWithT(t)
	root, err := controlplane.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	files, err := filepath.Glob(filepath.Join(root, "examples", "propagation", "0*.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(files).NotTo(BeEmpty())
	objs, err := controlplane.ReadObjects(files...)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(controlplane.Apply(t.Context(), suite.Get(t).Hub.Client, objs...)).To(Succeed())
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
