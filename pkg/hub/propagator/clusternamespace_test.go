package propagator_test

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"github.com/canopy-policy/canopy/pkg/hub/propagator"
)

// TestRootInClusterNamespace creates a root Policy in a managed cluster's
// namespace: it is not propagated, and its condition says why and what to
// do. A root propagated from a namespace that then becomes a cluster's
// (a ManagedCluster of that name is created) loses its replicas.
func TestRootInClusterNamespace(t *testing.T) {
	ns := newNamespace(t) // for unique names
	name := "root-" + ns[len(ns)-6:]
	placeOn(t, "cluster-a", name, "cluster-a", "cluster-b")
	create(t, newPolicy("cluster-a", name), newBinding("cluster-a", name, name, policySubject(name)))

	expectCondition(t, "cluster-a", name, propagator.ReasonInClusterNamespace,
		"namespace of managed cluster cluster-a", "policy-encryption-key", "Create the policy in another namespace")
	g := NewWithT(t)
	g.Consistently(func() ([]string, error) { return replicaClusters(t.Context(), "cluster-a", name) }, "2s").Should(BeEmpty())
	g.Expect(getPolicy(g, t.Context(), "cluster-a", name).Status.Placement).To(BeEmpty())
	expectEvent(t, "cluster-a", name, propagator.ReasonInClusterNamespace+": ")

	t.Run("a namespace that becomes a cluster's", func(t *testing.T) {
		later := newNamespace(t)
		placeOn(t, later, "pl", "cluster-a")
		create(t, newPolicy(later, "pol"), newBinding(later, "pb", "pl", policySubject("pol")))
		expectReplicasOn(t, later, "pol", "cluster-a")

		mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: later}}
		create(t, mc)
		t.Cleanup(func() { _ = env.Hub.Client.Delete(t.Context(), mc) })

		expectReplicasOn(t, later, "pol")
		expectCondition(t, later, "pol", propagator.ReasonInClusterNamespace, "namespace of managed cluster "+later)
	})
}
