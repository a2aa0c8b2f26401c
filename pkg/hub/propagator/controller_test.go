package propagator_test

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/pkg/hub/propagator"
)

func TestPlacementChangeMovesReplicas(t *testing.T) {
	ns := newNamespace(t)
	root := newPolicy(ns, "pol")
	root.Labels = map[string]string{"team": "a"}
	root.Annotations = map[string]string{"policy.open-cluster-management.io/standards": "NIST SP 800-53"}
	root.Spec.Dependencies = []policyv1.PolicyDependency{{TypeMeta: metav1.TypeMeta{Kind: "Policy"}, Name: "base", Compliance: policyv1.Compliant}}
	placeOn(t, ns, "pl", "cluster-a", "cluster-b")
	create(t, root, newBinding(ns, "pb", "pl", policySubject("pol")))

	expectReplicasOn(t, ns, "pol", "cluster-a", "cluster-b")
	g := NewWithT(t)
	replica := getReplica(g, t.Context(), "cluster-a", ns, "pol")
	g.Expect(replica.Labels).To(And(
		HaveKeyWithValue(policyv1.RootPolicyLabel, ns+".pol"),
		HaveKeyWithValue(policyv1.ClusterNameLabel, "cluster-a"),
		HaveKeyWithValue(policyv1.ClusterNamespaceLabel, "cluster-a"),
		HaveKeyWithValue("team", "a")))
	g.Expect(replica.Annotations).To(HaveKeyWithValue("policy.open-cluster-management.io/standards", "NIST SP 800-53"))
	g.Expect(replica.OwnerReferences).To(BeEmpty())
	g.Expect(replica.Spec.PolicyTemplates).To(Equal(root.Spec.PolicyTemplates))
	g.Expect(replica.Spec.Dependencies).To(ConsistOf(HaveField("Name", ns+".base")))
	expectCondition(t, ns, "pol", propagator.ReasonPropagated, "Replicated to 2 managed clusters.")
	g.Expect(getPolicy(g, t.Context(), ns, "pol").Status.Placement).To(Equal([]policyv1.Placement{
		{PlacementBinding: "pb", Placement: "pl", Decisions: decisions("cluster-a", "cluster-b")},
	}))

	placeOn(t, ns, "pl", "cluster-b", "cluster-c")
	expectReplicasOn(t, ns, "pol", "cluster-b", "cluster-c")

	t.Run("spec changes reach the replicas", func(t *testing.T) {
		update(t, root, func(p *policyv1.Policy) { p.Spec.RemediationAction = policyv1.Enforce })
		NewWithT(t).Eventually(func(g Gomega) {
			g.Expect(getReplica(g, t.Context(), "cluster-c", ns, "pol").Spec.RemediationAction).To(Equal(policyv1.Enforce))
		}).Should(Succeed())
	})

	t.Run("replicas changed or deleted by others are restored", func(t *testing.T) {
		g := NewWithT(t)
		replica := getReplica(g, t.Context(), "cluster-b", ns, "pol")
		update(t, replica, func(p *policyv1.Policy) { p.Spec.Disabled = true; p.Labels["team"] = "b" })
		g.Expect(env.Hub.Client.Delete(t.Context(), getReplica(g, t.Context(), "cluster-c", ns, "pol"))).To(Succeed())
		g.Eventually(func(g Gomega) {
			b := getReplica(g, t.Context(), "cluster-b", ns, "pol")
			g.Expect(b.Spec.Disabled).To(BeFalse())
			g.Expect(b.Labels).To(HaveKeyWithValue("team", "a"))
			getReplica(g, t.Context(), "cluster-c", ns, "pol")
		}).Should(Succeed())
	})
}

func TestBindingDeleted(t *testing.T) {
	ns := newNamespace(t)
	placeOn(t, ns, "pl-a", "cluster-a")
	placeOn(t, ns, "pl-b", "cluster-b")
	keep, drop := newBinding(ns, "keep", "pl-a", policySubject("pol")), newBinding(ns, "drop", "pl-b", policySubject("pol"))
	create(t, newPolicy(ns, "pol"), keep, drop)
	expectReplicasOn(t, ns, "pol", "cluster-a", "cluster-b")

	NewWithT(t).Expect(env.Hub.Client.Delete(t.Context(), drop)).To(Succeed())
	expectReplicasOn(t, ns, "pol", "cluster-a")
	expectCondition(t, ns, "pol", propagator.ReasonPropagated, "Replicated to 1 managed cluster.")

	NewWithT(t).Expect(env.Hub.Client.Delete(t.Context(), keep)).To(Succeed())
	expectReplicasOn(t, ns, "pol")
	expectCondition(t, ns, "pol", propagator.ReasonNoClustersSelected, "No PlacementBinding in namespace "+ns+" names this policy")
	g := NewWithT(t)
	g.Expect(getPolicy(g, t.Context(), ns, "pol").Status.Placement).To(BeEmpty())
}

func TestRestrictedBindingOverrides(t *testing.T) {
	ns := newNamespace(t)
	placeOn(t, ns, "selects", "cluster-a", "cluster-b")
	placeOn(t, ns, "overrides", "cluster-b", "cluster-c")
	override := newBinding(ns, "enforce-b-c", "overrides", policySubject("pol"))
	override.SubFilter = policyv1.Restricted
	override.BindingOverrides.RemediationAction = "enforce"
	create(t, newPolicy(ns, "pol"), newBinding(ns, "select", "selects", policySubject("pol")), override)

	expectReplicasOn(t, ns, "pol", "cluster-a", "cluster-b") // not cluster-c: a restricted binding never selects
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		g.Expect(getReplica(g, t.Context(), "cluster-b", ns, "pol").Spec.RemediationAction).To(Equal(policyv1.RemediationAction("enforce")))
		g.Expect(getReplica(g, t.Context(), "cluster-a", ns, "pol").Spec.RemediationAction).To(Equal(policyv1.Inform))
		g.Expect(getPolicy(g, t.Context(), ns, "pol").Status.Placement).To(Equal([]policyv1.Placement{
			{PlacementBinding: "enforce-b-c", Placement: "overrides", Decisions: decisions("cluster-b")},
			{PlacementBinding: "select", Placement: "selects", Decisions: decisions("cluster-a", "cluster-b")},
		}))
	}).Should(Succeed())

	g.Expect(env.Hub.Client.Delete(t.Context(), override)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(getReplica(g, t.Context(), "cluster-b", ns, "pol").Spec.RemediationAction).To(Equal(policyv1.Inform))
	}).Should(Succeed())
}

func TestPolicySetMembershipChange(t *testing.T) {
	ns := newNamespace(t)
	placeOn(t, ns, "pl", "cluster-a")
	set := newPolicySet(ns, "set", "p1")
	dependant := newPolicy(ns, "dependant")
	dependant.Spec.Dependencies = []policyv1.PolicyDependency{{
		TypeMeta: metav1.TypeMeta{APIVersion: policyv1beta1.GroupVersion.String(), Kind: policyv1beta1.PolicySetKind},
		Name:     "set", Compliance: policyv1.Compliant,
	}}
	create(t, newPolicy(ns, "p1"), newPolicy(ns, "p2"), dependant, set,
		newBinding(ns, "pb-set", "pl", setSubject("set")), newBinding(ns, "pb-dependant", "pl", policySubject("dependant")))
	expectReplicasOn(t, ns, "p1", "cluster-a")
	expectReplicasOn(t, ns, "p2")
	expectDependencies(t, ns, "dependant", ns+".p1")
	NewWithT(t).Eventually(func(g Gomega) []policyv1.Placement {
		return getPolicy(g, t.Context(), ns, "p1").Status.Placement
	}).Should(Equal([]policyv1.Placement{
		{PlacementBinding: "pb-set", Placement: "pl", PolicySet: "set", Decisions: decisions("cluster-a")},
	}))

	update(t, set, func(s *policyv1beta1.PolicySet) { s.Spec.Policies = []policyv1.NonEmptyString{"p1", "p2"} })
	expectReplicasOn(t, ns, "p2", "cluster-a")
	expectDependencies(t, ns, "dependant", ns+".p1", ns+".p2")

	update(t, set, func(s *policyv1beta1.PolicySet) { s.Spec.Policies = []policyv1.NonEmptyString{"p2"} })
	expectReplicasOn(t, ns, "p1")
	expectDependencies(t, ns, "dependant", ns+".p2")
	expectCondition(t, ns, "p1", propagator.ReasonNoClustersSelected)
}

func expectDependencies(t *testing.T, ns, name string, want ...string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) []string {
		var names []string
		for _, d := range getReplica(g, t.Context(), "cluster-a", ns, name).Spec.Dependencies {
			g.Expect(d.Kind).To(Equal(policyv1.PolicyKind))
			g.Expect(d.Namespace).To(BeEmpty())
			names = append(names, d.Name)
		}
		return names
	}).Should(Equal(want))
}

func TestDisabledToggled(t *testing.T) {
	ns := newNamespace(t)
	placeOn(t, ns, "pl", "cluster-a", "cluster-b")
	root := newPolicy(ns, "pol")
	create(t, root, newBinding(ns, "pb", "pl", policySubject("pol")))
	expectReplicasOn(t, ns, "pol", "cluster-a", "cluster-b")

	update(t, root, func(p *policyv1.Policy) { p.Spec.Disabled = true })
	expectReplicasOn(t, ns, "pol")
	expectCondition(t, ns, "pol", propagator.ReasonDisabled)
	g := NewWithT(t)
	g.Expect(getPolicy(g, t.Context(), ns, "pol").Status.Placement).To(Equal([]policyv1.Placement{{PlacementBinding: "pb", Placement: "pl"}}))

	update(t, root, func(p *policyv1.Policy) { p.Spec.Disabled = false })
	expectReplicasOn(t, ns, "pol", "cluster-a", "cluster-b")
	expectCondition(t, ns, "pol", propagator.ReasonPropagated)
}

func TestDeletedRootLeavesNoReplicas(t *testing.T) {
	ns := newNamespace(t)
	placeOn(t, ns, "pl", clusters...)
	root := newPolicy(ns, "pol")
	create(t, root, newBinding(ns, "pb", "pl", policySubject("pol")))
	expectReplicasOn(t, ns, "pol", clusters...)

	NewWithT(t).Expect(env.Hub.Client.Delete(t.Context(), root)).To(Succeed())
	expectReplicasOn(t, ns, "pol")
}

func TestOrphansWhileHubStopped(t *testing.T) {
	ns := newNamespace(t)
	placeOn(t, ns, "pl", "cluster-a", "cluster-b")
	deleted, moved := newPolicy(ns, "deleted"), newPolicy(ns, "moved")
	create(t, deleted, moved, newBinding(ns, "pb", "pl", policySubject("deleted"), policySubject("moved")))
	expectReplicasOn(t, ns, "deleted", "cluster-a", "cluster-b")
	expectReplicasOn(t, ns, "moved", "cluster-a", "cluster-b")

	restart(t, func() {
		g := NewWithT(t)
		g.Expect(env.Hub.Client.Delete(t.Context(), deleted)).To(Succeed())
		placeOn(t, ns, "pl", "cluster-b")
		stray := newPolicy("cluster-c", ns+".never-existed")
		stray.Labels = map[string]string{policyv1.RootPolicyLabel: ns + ".never-existed"}
		create(t, stray)
		// Nothing changes while the hub is down.
		g.Expect(replicaClusters(t.Context(), ns, "deleted")).To(Equal([]string{"cluster-a", "cluster-b"}))
	})

	expectReplicasOn(t, ns, "deleted")
	expectReplicasOn(t, ns, "moved", "cluster-b")
	expectReplicasOn(t, ns, "never-existed")
}

func TestBadInput(t *testing.T) {
	t.Run("namespace and name over 62 characters", func(t *testing.T) {
		g := NewWithT(t)
		ns := newNamespace(t)
		name := "too-long-" + longName(52) // 61 characters, the most a root name may have
		placeOn(t, ns, "pl", "cluster-a")
		// The admission policy refuses such a root on creation, but not a
		// replica; an existing object can become a root by losing its label.
		long := newPolicy(ns, name)
		long.Labels = map[string]string{policyv1.RootPolicyLabel: "not-a-root-name"}
		create(t, long, newBinding(ns, "pb", "pl", policySubject(name)))
		update(t, long, func(p *policyv1.Policy) { delete(p.Labels, policyv1.RootPolicyLabel) })

		expectCondition(t, ns, name, propagator.ReasonNameTooLong, "at most 62 are allowed", "Recreate the policy with a shorter name")
		err := env.Hub.Client.Get(t.Context(), client.ObjectKey{Namespace: "cluster-a", Name: ns + "." + name}, &policyv1.Policy{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a replica of a root whose name is too long: %v", err)
		g.Eventually(func() ([]corev1.Event, error) { return eventsOf(t, ns, name) }).
			Should(ContainElement(And(HaveField("Reason", propagator.ReasonNameTooLong), HaveField("Type", corev1.EventTypeWarning))))
	})

	t.Run("a subject of an unknown kind", func(t *testing.T) {
		ns := newNamespace(t)
		placeOn(t, ns, "pl", "cluster-a")
		typo := newBinding(ns, "pb", "pl", policyv1.Subject{APIGroup: policyv1.GroupName, Kind: "Polcy", Name: "pol"})
		create(t, newPolicy(ns, "pol"), typo)
		expectCondition(t, ns, "pol", propagator.ReasonNoClustersSelected,
			`PlacementBinding pb names pol with kind "Polcy" of API group "policy.open-cluster-management.io", which is ignored: use kind Policy or PolicySet`)
		expectReplicasOn(t, ns, "pol")

		update(t, typo, func(pb *policyv1.PlacementBinding) { pb.Subjects[0].Kind = policyv1.PolicyKind })
		expectReplicasOn(t, ns, "pol", "cluster-a")
		expectCondition(t, ns, "pol", propagator.ReasonPropagated)
	})

	t.Run("placements without decisions", func(t *testing.T) {
		ns := newNamespace(t)
		placeOn(t, ns, "empty")
		create(t, newPolicy(ns, "pol"), newBinding(ns, "pb-empty", "empty", policySubject("pol")),
			newBinding(ns, "pb-missing", "missing", policySubject("pol")))
		expectCondition(t, ns, "pol", propagator.ReasonNoClustersSelected,
			"Placement empty of PlacementBinding pb-empty has no decisions",
			"Placement missing of PlacementBinding pb-missing does not exist: create it in namespace "+ns)

		placeOn(t, ns, "missing", "cluster-b")
		expectReplicasOn(t, ns, "pol", "cluster-b")
		expectCondition(t, ns, "pol", propagator.ReasonPropagated,
			"Replicated to 1 managed cluster. Placement empty of PlacementBinding pb-empty has no decisions")
	})

	t.Run("a PolicySet listing a missing policy", func(t *testing.T) {
		ns := newNamespace(t)
		placeOn(t, ns, "pl", "cluster-a")
		create(t, newPolicy(ns, "present"), newPolicySet(ns, "set", "present", "absent"), newBinding(ns, "pb", "pl", setSubject("set")))
		expectReplicasOn(t, ns, "present", "cluster-a")
		setReplicaCompliance(t, "cluster-a", ns, "present", policyv1.Compliant)
		NewWithT(t).Eventually(func(g Gomega) policyv1beta1.PolicySetStatus {
			set := &policyv1beta1.PolicySet{}
			g.Expect(env.Hub.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "set"}, set)).To(Succeed())
			return set.Status
		}).Should(And(
			HaveField("ComplianceState", policyv1.Compliant),
			HaveField("StatusMessage", "Missing policies (not found in the namespace of the set): absent")))
	})
}

func TestPropagationFailure(t *testing.T) {
	ns := newNamespace(t)
	placeOn(t, ns, "pl", "cluster-a", "unregistered")
	create(t, newPolicy(ns, "pol"), newBinding(ns, "pb", "pl", policySubject("pol")))

	expectReplicasOn(t, ns, "pol", "cluster-a") // one failing cluster does not block the others
	expectCondition(t, ns, "pol", propagator.ReasonPropagationFailed,
		"Writing the replicas failed for 1 of 2 selected managed clusters (retrying): cluster unregistered: creating replica unregistered/"+ns+".pol",
		`namespaces "unregistered" not found`)
	g := NewWithT(t)
	g.Eventually(func() ([]corev1.Event, error) { return eventsOf(t, ns, "pol") }).
		Should(ContainElement(And(HaveField("Reason", propagator.ReasonPropagationFailed), HaveField("Type", corev1.EventTypeWarning))))
	g.Expect(metricValue("canopy_propagation_failures_total", map[string]string{"namespace": ns, "policy": "pol"})).To(BeNumerically(">=", 1))

	placeOn(t, ns, "pl", "cluster-a") // leave nothing retrying behind
	expectCondition(t, ns, "pol", propagator.ReasonPropagated)
}

func TestRootAndPolicySetStatus(t *testing.T) {
	ns := newNamespace(t)
	placeOn(t, ns, "pl", "cluster-a", "cluster-b")
	create(t, newPolicy(ns, "p1"), newPolicy(ns, "p2"), newPolicySet(ns, "set", "p1", "p2"), newBinding(ns, "pb", "pl", setSubject("set")))
	expectReplicasOn(t, ns, "p1", "cluster-a", "cluster-b")
	expectReplicasOn(t, ns, "p2", "cluster-a", "cluster-b")

	setReplicaCompliance(t, "cluster-a", ns, "p1", policyv1.Compliant)
	setReplicaCompliance(t, "cluster-b", ns, "p1", policyv1.NonCompliant)
	setReplicaCompliance(t, "cluster-a", ns, "p2", policyv1.Compliant)
	setReplicaCompliance(t, "cluster-b", ns, "p2", policyv1.Pending)
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		p1 := getPolicy(g, t.Context(), ns, "p1")
		g.Expect(p1.Status.Status).To(Equal([]policyv1.CompliancePerClusterStatus{
			clusterStatus("cluster-a", policyv1.Compliant), clusterStatus("cluster-b", policyv1.NonCompliant)}))
		g.Expect(p1.Status.ComplianceState).To(Equal(policyv1.NonCompliant))
		g.Expect(getPolicy(g, t.Context(), ns, "p2").Status.ComplianceState).To(Equal(policyv1.Pending))
		set := &policyv1beta1.PolicySet{}
		g.Expect(env.Hub.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "set"}, set)).To(Succeed())
		g.Expect(set.Status.ComplianceState).To(Equal(policyv1.NonCompliant))
		g.Expect(set.Status.StatusMessage).To(Equal("Policies awaiting pending dependencies: p2"))
		g.Expect(set.Status.Placement).To(Equal([]policyv1beta1.PolicySetStatusPlacement{{PlacementBinding: "pb", Placement: "pl"}}))
	}).Should(Succeed())
	g.Expect(metricValue("canopy_policy_compliance", map[string]string{"namespace": ns, "policy": "p1", "cluster": "cluster-b"})).To(Equal(1.0))
}

// eventsOf lists the events recorded on the policy ns/name.
func eventsOf(t *testing.T, ns, name string) ([]corev1.Event, error) {
	list := &corev1.EventList{}
	err := env.Hub.Client.List(t.Context(), list, client.InNamespace(ns), client.MatchingFields{"involvedObject.name": name})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return list.Items, err
}

func longName(n int) string { return strings.Repeat("x", n) }
