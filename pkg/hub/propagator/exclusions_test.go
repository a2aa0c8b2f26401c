package propagator_test

import (
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
)

// exclude sets the exclusions of a policy set: policy off clusters.
func exclude(set *policyv1beta1.PolicySet, policy, reason string, clusters ...string) {
	e := policyv1beta1.PolicySetExclusion{PolicyName: policyv1.NonEmptyString(policy), Reason: reason}
	for _, c := range clusters {
		e.ClusterNames = append(e.ClusterNames, policyv1.NonEmptyString(c))
	}
	set.Spec.Exclusions = []policyv1beta1.PolicySetExclusion{e}
}

// TestPolicySetExclusions follows OCM's case18 (governance-policy-propagator
// test/e2e/case18_policyset_exclusions_test.go): a member excluded from a
// cluster is not propagated there through the set, its root and the set
// say so, other members and other bindings are not affected, and changing
// or clearing the exclusion moves the replicas.
func TestPolicySetExclusions(t *testing.T) {
	ns := newNamespace(t)
	placeOn(t, ns, "pl", "cluster-a", "cluster-b", "cluster-c")
	set := newPolicySet(ns, "set", "pol", "other")
	exclude(set, "pol", "cluster-b runs the legacy stack", "cluster-b")
	create(t, newPolicy(ns, "pol"), newPolicy(ns, "other"), set, newBinding(ns, "pb", "pl", setSubject("set")))

	expectReplicasOn(t, ns, "pol", "cluster-a", "cluster-c")
	expectReplicasOn(t, ns, "other", "cluster-a", "cluster-b", "cluster-c")
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		root := getPolicy(g, t.Context(), ns, "pol")
		g.Expect(root.Status.Placement).To(Equal([]policyv1.Placement{{
			PlacementBinding: "pb", Placement: "pl", PolicySet: "set",
			Decisions:  decisions("cluster-a", "cluster-c"),
			Exclusions: []policyv1.PolicyExclusion{{ClusterName: "cluster-b"}},
		}}))
		g.Expect(root.Status.Status).To(Equal([]policyv1.CompliancePerClusterStatus{
			clusterStatus("cluster-a", ""), clusterStatus("cluster-c", "")}))
	}).Should(Succeed())
	setReplicaCompliance(t, "cluster-a", ns, "pol", policyv1.Compliant)
	setReplicaCompliance(t, "cluster-c", ns, "pol", policyv1.Compliant)
	for _, c := range clusters {
		setReplicaCompliance(t, c, ns, "other", policyv1.Compliant)
	}
	g.Eventually(func(g Gomega) policyv1beta1.PolicySetStatus {
		g.Expect(env.Hub.Client.Get(t.Context(), client.ObjectKeyFromObject(set), set)).To(Succeed())
		return set.Status
	}).Should(And(
		HaveField("Exclusions", Equal([]policyv1beta1.PolicySetStatusExclusion{
			{PolicyName: "pol", Clusters: []policyv1.NonEmptyString{"cluster-b"}}})),
		HaveField("StatusMessage", "All policies are reporting status; One or more policies were excluded. For details, see status.exclusions."),
		HaveField("ComplianceState", policyv1.Compliant)))

	t.Run("a binding naming the policy itself still places it, and status.status says which", func(t *testing.T) {
		placeOn(t, ns, "pl-b", "cluster-b")
		direct := newBinding(ns, "direct", "pl-b", policySubject("pol"))
		create(t, direct)
		expectReplicasOn(t, ns, "pol", "cluster-a", "cluster-b", "cluster-c")
		NewWithT(t).Eventually(func(g Gomega) []policyv1.CompliancePerClusterStatus {
			return getPolicy(g, t.Context(), ns, "pol").Status.Status
		}).Should(ContainElement(policyv1.CompliancePerClusterStatus{
			ClusterName: "cluster-b", ClusterNamespace: "cluster-b",
			RemainingBindings: []policyv1.RemainingBinding{{PlacementBinding: "direct"}},
		}))
		NewWithT(t).Expect(env.Hub.Client.Delete(t.Context(), direct)).To(Succeed())
		expectReplicasOn(t, ns, "pol", "cluster-a", "cluster-c")
	})

	t.Run("moving the exclusion moves the replicas", func(t *testing.T) {
		update(t, set, func(s *policyv1beta1.PolicySet) { exclude(s, "pol", "", "cluster-a") })
		expectReplicasOn(t, ns, "pol", "cluster-b", "cluster-c")
		expectReplicasOn(t, ns, "other", "cluster-a", "cluster-b", "cluster-c")
	})

	t.Run("clearing the exclusions propagates everywhere and clears the status", func(t *testing.T) {
		update(t, set, func(s *policyv1beta1.PolicySet) { s.Spec.Exclusions = nil })
		expectReplicasOn(t, ns, "pol", "cluster-a", "cluster-b", "cluster-c")
		g := NewWithT(t)
		g.Eventually(func(g Gomega) {
			g.Expect(env.Hub.Client.Get(t.Context(), client.ObjectKeyFromObject(set), set)).To(Succeed())
			g.Expect(set.Status.Exclusions).To(BeEmpty())
			g.Expect(set.Status.StatusMessage).NotTo(ContainSubstring("One or more policies were excluded"))
			g.Expect(getPolicy(g, t.Context(), ns, "pol").Status.Placement).To(ConsistOf(HaveField("Exclusions", BeEmpty())))
		}).Should(Succeed())
	})
}
