package propagator_test

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/hub/propagator"
)

// Deleting a PlacementBinding reconciles the roots its subjects name at
// once (the binding's watch maps the deleted binding's subjects, policy
// sets through their members), so that their replicas and
// status.placement follow without waiting for anything else to change:
// nothing else changes in these tests. OCM fixed its own propagator for
// this in 2026 (governance-policy-propagator 395f519, "Fix PlacementBinding
// deletion not triggering policy reconciliation").

// TestBindingDeletedWithItsPlacement is OCM's case: a binding whose
// bindingOverrides enforce the policy on a cluster another binding also
// selects is deleted together with its Placement and PlacementDecisions;
// the replica there reverts to the root's remediationAction, and
// status.placement keeps only the other binding.
func TestBindingDeletedWithItsPlacement(t *testing.T) {
	ns := newNamespace(t)
	placeOn(t, ns, "selects", "cluster-a", "cluster-b")
	placeOn(t, ns, "overrides", "cluster-b")
	override := newBinding(ns, "enforce-b", "overrides", policySubject("pol"))
	override.BindingOverrides.RemediationAction = "enforce"
	create(t, newPolicy(ns, "pol"), newBinding(ns, "select", "selects", policySubject("pol")), override)
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		g.Expect(getReplica(g, t.Context(), "cluster-b", ns, "pol").Spec.RemediationAction).To(Equal(policyv1.RemediationAction("enforce")), "bindingOverrides as OCM writes them")
		g.Expect(getPolicy(g, t.Context(), ns, "pol").Status.Placement).To(Equal([]policyv1.Placement{
			{PlacementBinding: "enforce-b", Placement: "overrides", Decisions: decisions("cluster-b")},
			{PlacementBinding: "select", Placement: "selects", Decisions: decisions("cluster-a", "cluster-b")},
		}))
	}).Should(Succeed())

	g.Expect(env.Hub.Client.Delete(t.Context(), override)).To(Succeed())
	g.Expect(env.Hub.Client.Delete(t.Context(), &clusterv1beta1.Placement{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "overrides"}})).To(Succeed())
	g.Expect(env.Hub.Client.DeleteAllOf(t.Context(), &clusterv1beta1.PlacementDecision{}, client.InNamespace(ns),
		client.MatchingLabels{clusterv1beta1.PlacementLabel: "overrides"})).To(Succeed())

	g.Eventually(func(g Gomega) {
		g.Expect(getReplica(g, t.Context(), "cluster-b", ns, "pol").Spec.RemediationAction).To(Equal(policyv1.Inform))
		g.Expect(getPolicy(g, t.Context(), ns, "pol").Status.Placement).To(Equal([]policyv1.Placement{
			{PlacementBinding: "select", Placement: "selects", Decisions: decisions("cluster-a", "cluster-b")},
		}))
	}).Should(Succeed())
	expectReplicasOn(t, ns, "pol", "cluster-a", "cluster-b")
}

// TestPolicySetBindingDeleted deletes the binding of a PolicySet: the
// replicas of its members go, except where another binding names a member
// directly, and the members' status.placement drops the set's binding.
// Then a binding is deleted together with the PolicySet it names.
func TestPolicySetBindingDeleted(t *testing.T) {
	ns := newNamespace(t)
	placeOn(t, ns, "pl", "cluster-a", "cluster-c")
	placeOn(t, ns, "pl-b", "cluster-b")
	setBinding := newBinding(ns, "pb-set", "pl", setSubject("set"))
	create(t, newPolicy(ns, "p1"), newPolicy(ns, "p2"), newPolicySet(ns, "set", "p1", "p2"), setBinding,
		newBinding(ns, "pb-direct", "pl-b", policySubject("p1")))
	expectReplicasOn(t, ns, "p1", "cluster-a", "cluster-b", "cluster-c")
	expectReplicasOn(t, ns, "p2", "cluster-a", "cluster-c")
	g := NewWithT(t)
	g.Eventually(func(g Gomega) []policyv1.Placement {
		return getPolicy(g, t.Context(), ns, "p1").Status.Placement
	}).Should(Equal([]policyv1.Placement{
		{PlacementBinding: "pb-direct", Placement: "pl-b", Decisions: decisions("cluster-b")},
		{PlacementBinding: "pb-set", Placement: "pl", PolicySet: "set", Decisions: decisions("cluster-a", "cluster-c")},
	}))

	g.Expect(env.Hub.Client.Delete(t.Context(), setBinding)).To(Succeed())
	expectReplicasOn(t, ns, "p2")
	expectReplicasOn(t, ns, "p1", "cluster-b")
	expectCondition(t, ns, "p2", propagator.ReasonNoClustersSelected)
	expectCondition(t, ns, "p1", propagator.ReasonPropagated, "Replicated to 1 managed cluster.")
	g.Eventually(func(g Gomega) {
		g.Expect(getPolicy(g, t.Context(), ns, "p2").Status.Placement).To(BeEmpty())
		g.Expect(getPolicy(g, t.Context(), ns, "p1").Status.Placement).To(Equal([]policyv1.Placement{
			{PlacementBinding: "pb-direct", Placement: "pl-b", Decisions: decisions("cluster-b")},
		}))
	}).Should(Succeed())

	t.Run("deleted with its PolicySet", func(t *testing.T) {
		set2 := newPolicySet(ns, "set2", "p3")
		binding := newBinding(ns, "pb-set2", "pl", setSubject("set2"))
		create(t, newPolicy(ns, "p3"), set2, binding)
		expectReplicasOn(t, ns, "p3", "cluster-a", "cluster-c")
		g := NewWithT(t)
		g.Expect(env.Hub.Client.Delete(t.Context(), binding)).To(Succeed())
		g.Expect(env.Hub.Client.Delete(t.Context(), set2)).To(Succeed())
		expectReplicasOn(t, ns, "p3")
		expectCondition(t, ns, "p3", propagator.ReasonNoClustersSelected)
		g.Eventually(func(g Gomega) []policyv1.Placement {
			return getPolicy(g, t.Context(), ns, "p3").Status.Placement
		}).Should(BeEmpty())
	})
}
