package propagator_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/hub/propagator"
)

// decisionGroup is one decision group of a Placement, as OCM's placement
// controller writes it: one PlacementDecision labelled with the group.
type decisionGroup struct {
	name     string
	clusters []string
}

// placeInGroups makes the Placement name exist and select the clusters of
// groups, group i having decision-group-index i, as OCM labels them.
func placeInGroups(t *testing.T, ns, name string, groups ...decisionGroup) {
	t.Helper()
	g := NewWithT(t)
	pl := &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	pl.Spec.ClusterSets = []string{"default"}
	if err := env.Hub.Client.Create(t.Context(), pl); !apierrors.IsAlreadyExists(err) {
		g.Expect(err).NotTo(HaveOccurred())
	}
	for i, group := range groups {
		pd := &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-decision-%d", name, i+1)}}
		_, err := controllerutil.CreateOrUpdate(t.Context(), env.Hub.Client, pd, func() error {
			pd.Labels = map[string]string{
				clusterv1beta1.PlacementLabel:          name,
				clusterv1beta1.DecisionGroupIndexLabel: strconv.Itoa(i),
				clusterv1beta1.DecisionGroupNameLabel:  group.name,
			}
			return nil
		})
		g.Expect(err).NotTo(HaveOccurred())
		pd.Status.Decisions = nil
		for _, c := range group.clusters {
			pd.Status.Decisions = append(pd.Status.Decisions, clusterv1beta1.ClusterDecision{ClusterName: c, Reason: "test"})
		}
		g.Expect(env.Hub.Client.Status().Update(t.Context(), pd)).To(Succeed())
	}
}

// canaryFirst places name on cluster-a (group canary), then cluster-b and
// cluster-c (group production).
func canaryFirst(t *testing.T, ns, name string) {
	t.Helper()
	placeInGroups(t, ns, name, decisionGroup{"canary", []string{"cluster-a"}}, decisionGroup{"production", []string{"cluster-b", "cluster-c"}})
}

// perGroup is a ProgressivePerGroup strategy with canary mandatory.
func perGroup(deadline string) *clusterv1alpha1.RolloutStrategy {
	s := &clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.ProgressivePerGroup, ProgressivePerGroup: &clusterv1alpha1.RolloutProgressivePerGroup{}}
	s.ProgressivePerGroup.MandatoryDecisionGroups.MandatoryDecisionGroups = []clusterv1alpha1.MandatoryDecisionGroup{{GroupName: "canary"}}
	s.ProgressivePerGroup.ProgressDeadline = deadline
	return s
}

// rolloutOf waits until the status.rollout of ns/name is there and returns it.
func rolloutOf(g Gomega, t *testing.T, ns, name string) *policyv1.RolloutStatus {
	p := getPolicy(g, t.Context(), ns, name)
	g.Expect(p.Status.Rollout).NotTo(BeNil())
	return p.Status.Rollout
}

// states returns the state of every cluster of a rollout, by cluster.
func states(r *policyv1.RolloutStatus) map[string]policyv1.RolloutClusterState {
	out := map[string]policyv1.RolloutClusterState{}
	for _, g := range r.Groups {
		for _, c := range g.Clusters {
			out[c.Name] = c.State
		}
	}
	return out
}

// templateName is the name of the replica's first policy template.
func templateName(g Gomega, t *testing.T, cluster, ns, name string) string {
	_, n := getReplica(g, t.Context(), cluster, ns, name).Spec.PolicyTemplates[0].KindAndName()
	return n
}

// TestRolloutPerGroupWaitsForCanary: a new root reaches the production
// group only once its canary replica is Compliant; status.rollout shows
// each group.
func TestRolloutPerGroupWaitsForCanary(t *testing.T) {
	ns := newNamespace(t)
	canaryFirst(t, ns, "groups")
	p := newPolicy(ns, "p")
	p.Spec.RolloutStrategy = perGroup("")
	create(t, p, newBinding(ns, "b", "groups", policySubject("p")))

	expectReplicasOn(t, ns, "p", "cluster-a")
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		r := rolloutOf(g, t, ns, "p")
		g.Expect(r.Phase).To(Equal(policyv1.RolloutProgressing))
		g.Expect(r.Type).To(Equal(clusterv1alpha1.ProgressivePerGroup))
		g.Expect(r.Groups).To(HaveLen(2))
		g.Expect(r.Groups[0]).To(groupCounts("canary", 1, 1, 0, 0))
		g.Expect(r.Groups[1]).To(groupCounts("production", 0, 0, 0, 2))
		g.Expect(r.Message).To(ContainSubstring(`The rollout is at decision group "canary" (index 0) of Placement groups.`))
	}).Should(Succeed())
	expectCondition(t, ns, "p", propagator.ReasonPropagated, "Replicated with the current spec to 1 of 3 selected managed clusters; the others wait")
	g.Consistently(func() ([]string, error) { return replicaClusters(t.Context(), ns, "p") }, "1s").Should(Equal([]string{"cluster-a"}))

	report(t, "cluster-a", ns, "p", policyv1.Compliant)
	expectReplicasOn(t, ns, "p", clusters...)
	report(t, "cluster-b", ns, "p", policyv1.Compliant)
	report(t, "cluster-c", ns, "p", policyv1.Compliant)
	g.Eventually(func(g Gomega) {
		r := rolloutOf(g, t, ns, "p")
		g.Expect(r.Phase).To(Equal(policyv1.RolloutSucceeded), r.Message)
		g.Expect(r.Groups[1]).To(groupCounts("production", 2, 0, 2, 0))
	}).Should(Succeed())
	expectCondition(t, ns, "p", propagator.ReasonPropagated, "Replicated to 3 managed clusters.")
}

// report records, as a cluster's agent does, a compliance report on the
// replica's current spec: status.compliant, status.evaluatedGeneration (the
// replica's generation), and a new newest entry in the history of its
// first template, made now.
func report(t *testing.T, cluster, ns, name string, state policyv1.ComplianceState) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		p := getReplica(g, t.Context(), cluster, ns, name)
		p.Status.ComplianceState, p.Status.EvaluatedGeneration = state, p.Generation
		if len(p.Status.Details) == 0 {
			p.Status.Details = []policyv1.DetailsPerTemplate{{TemplateMeta: metav1.ObjectMeta{Name: name + "-template"}}}
		}
		d := &p.Status.Details[0]
		d.ComplianceState = state
		entry := policyv1.ComplianceHistory{LastTimestamp: metav1.Now(), EventName: fmt.Sprintf("%s.%d", name, time.Now().UnixNano()),
			Message: fmt.Sprintf("%s; notification - reported at %s", state, time.Now().Format(time.RFC3339Nano))}
		d.History = append([]policyv1.ComplianceHistory{entry}, d.History...)
		g.Expect(env.Hub.Client.Status().Update(t.Context(), p)).To(Succeed())
	}).Should(Succeed())
}

// rolledOutToAll creates policy p rolled out ProgressivePerGroup, canary
// first, and reports its canary Compliant, so that it reaches every
// cluster. It returns p's namespace and p.
func rolledOutToAll(t *testing.T) (string, *policyv1.Policy) {
	t.Helper()
	ns := newNamespace(t)
	canaryFirst(t, ns, "groups")
	p := newPolicy(ns, "p")
	p.Spec.RolloutStrategy = perGroup("")
	create(t, p, newBinding(ns, "b", "groups", policySubject("p")))
	expectReplicasOn(t, ns, "p", "cluster-a")
	report(t, "cluster-a", ns, "p", policyv1.Compliant)
	expectReplicasOn(t, ns, "p", clusters...)
	return ns, p
}

// TestRolloutCountsReportsOnTheCurrentSpec: after a change, a canary whose
// replica is still Compliant (it reported on the previous generation) holds
// the next group until its agent reports on the current one.
func TestRolloutCountsReportsOnTheCurrentSpec(t *testing.T) {
	ns, p := rolledOutToAll(t)
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		g.Expect(states(rolloutOf(g, t, ns, "p"))).To(HaveKeyWithValue("cluster-a", policyv1.RolloutClusterSucceeded))
	}).Should(Succeed())

	update(t, p, func(p *policyv1.Policy) {
		p.Spec.PolicyTemplates[0].ObjectDefinition.Raw = fmt.Appendf(nil, configurationPolicy, "p-template-v2")
	})
	g.Eventually(func(g Gomega) string { return templateName(g, t, "cluster-a", ns, "p") }).Should(Equal("p-template-v2"))
	waiting := func(g Gomega) {
		g.Expect(getReplica(g, t.Context(), "cluster-a", ns, "p").Status.ComplianceState).To(Equal(policyv1.Compliant))
		g.Expect(templateName(g, t, "cluster-b", ns, "p")).To(Equal("p-template"))
		r := rolloutOf(g, t, ns, "p")
		g.Expect(states(r)).To(HaveKeyWithValue("cluster-a", policyv1.RolloutClusterProgressing))
		g.Expect(r.Message).To(HaveSuffix("Compliant only on reports about a previous spec (their agents have not reported " +
			"evaluating the current generation of their replica yet, status.evaluatedGeneration): cluster-a."))
	}
	g.Eventually(waiting).Should(Succeed())
	g.Consistently(waiting, "2s").Should(Succeed())

	report(t, "cluster-a", ns, "p", policyv1.Compliant)
	g.Eventually(func(g Gomega) {
		g.Expect(templateName(g, t, "cluster-b", ns, "p")).To(Equal("p-template-v2"))
		g.Expect(templateName(g, t, "cluster-c", ns, "p")).To(Equal("p-template-v2"))
	}).Should(Succeed())
}

// TestRolloutChangeOutsideTemplates: a change that reaches no template
// object (here the policy's dependencies) still gives the replica a new
// generation, which the canary's agent reports once it evaluated it (the
// agent does so at once: no template object has to change); the rollout
// waits for that report, not for a new compliance.
func TestRolloutChangeOutsideTemplates(t *testing.T) {
	ns, p := rolledOutToAll(t)

	dep := policyv1.PolicyDependency{Name: "other", Namespace: ns, Compliance: policyv1.Compliant}
	dep.APIVersion, dep.Kind = policyv1.GroupVersion.String(), "Policy"
	update(t, p, func(p *policyv1.Policy) { p.Spec.Dependencies = []policyv1.PolicyDependency{dep} })
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		g.Expect(getReplica(g, t.Context(), "cluster-a", ns, "p").Spec.Dependencies).To(HaveLen(1))
		g.Expect(states(rolloutOf(g, t, ns, "p"))).To(HaveKeyWithValue("cluster-a", policyv1.RolloutClusterProgressing))
	}).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(getReplica(g, t.Context(), "cluster-b", ns, "p").Spec.Dependencies).To(BeEmpty())
	}, "1s").Should(Succeed())

	report(t, "cluster-a", ns, "p", policyv1.Compliant)
	g.Eventually(func(g Gomega) {
		for _, c := range clusters {
			g.Expect(getReplica(g, t.Context(), c, ns, "p").Spec.Dependencies).To(HaveLen(1), c)
		}
		g.Expect(states(rolloutOf(g, t, ns, "p"))).To(HaveKeyWithValue("cluster-a", policyv1.RolloutClusterSucceeded))
	}).Should(Succeed())
}

// groupCounts matches a RolloutGroupStatus by name and counts of updated,
// progressing, succeeded and waiting clusters.
func groupCounts(name string, updated, progressing, succeeded, waiting int32) OmegaMatcher {
	return WithTransform(func(g policyv1.RolloutGroupStatus) []any {
		return []any{g.GroupName, g.Updated, g.Progressing, g.Succeeded, g.Waiting}
	}, Equal([]any{name, updated, progressing, succeeded, waiting}))
}

// TestRolloutChangeRestartsFromFirstGroup: a change to the root reaches the
// canary first while production keeps the previous spec, and production
// once the canary reports Compliant again.
func TestRolloutChangeRestartsFromFirstGroup(t *testing.T) {
	ns, p := rolledOutToAll(t)
	report(t, "cluster-a", ns, "p", policyv1.NonCompliant)

	update(t, p, func(p *policyv1.Policy) {
		p.Spec.PolicyTemplates[0].ObjectDefinition.Raw = fmt.Appendf(nil, configurationPolicy, "p-template-v2")
	})
	g := NewWithT(t)
	g.Eventually(func(g Gomega) string { return templateName(g, t, "cluster-a", ns, "p") }).Should(Equal("p-template-v2"))
	g.Eventually(func(g Gomega) {
		r := rolloutOf(g, t, ns, "p")
		g.Expect(r.Phase).To(Equal(policyv1.RolloutProgressing))
		g.Expect(states(r)).To(Equal(map[string]policyv1.RolloutClusterState{
			"cluster-a": policyv1.RolloutClusterProgressing, "cluster-b": policyv1.RolloutWaiting, "cluster-c": policyv1.RolloutWaiting}))
	}).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(templateName(g, t, "cluster-b", ns, "p")).To(Equal("p-template"))
		g.Expect(templateName(g, t, "cluster-c", ns, "p")).To(Equal("p-template"))
	}, "1s").Should(Succeed())

	report(t, "cluster-a", ns, "p", policyv1.Compliant)
	g.Eventually(func(g Gomega) {
		g.Expect(templateName(g, t, "cluster-b", ns, "p")).To(Equal("p-template-v2"))
		g.Expect(templateName(g, t, "cluster-c", ns, "p")).To(Equal("p-template-v2"))
	}).Should(Succeed())
}

// TestRolloutStopsAtProgressDeadline: a canary not Compliant within the
// progressDeadline (Pending here) stops the rollout with a clear status;
// turning Compliant lets it go on.
func TestRolloutStopsAtProgressDeadline(t *testing.T) {
	ns := newNamespace(t)
	canaryFirst(t, ns, "groups")
	p := newPolicy(ns, "p")
	p.Spec.RolloutStrategy = perGroup("2s")
	create(t, p, newBinding(ns, "b", "groups", policySubject("p")))
	expectReplicasOn(t, ns, "p", "cluster-a")
	report(t, "cluster-a", ns, "p", policyv1.Pending)

	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		r := rolloutOf(g, t, ns, "p")
		g.Expect(r.Phase).To(Equal(policyv1.RolloutStopped))
		g.Expect(r.Reason).To(Equal(propagator.ReasonMaxFailuresReached))
		g.Expect(r.Message).To(ContainSubstring("Cluster cluster-a of Placement groups was not Compliant: NonCompliant on the current spec, " +
			"or not Compliant within the progressDeadline (2s)"))
		g.Expect(states(r)).To(HaveKeyWithValue("cluster-a", policyv1.RolloutClusterFailed))
		g.Expect(r.Groups[0].Failed).To(BeEquivalentTo(1))
	}).Should(Succeed())
	g.Consistently(func() ([]string, error) { return replicaClusters(t.Context(), ns, "p") }, "1s").Should(Equal([]string{"cluster-a"}))

	report(t, "cluster-a", ns, "p", policyv1.Compliant)
	expectReplicasOn(t, ns, "p", clusters...)
}

// TestRolloutBadInput: a mandatory decision group that does not exist
// holds the rollout (rather than updating every cluster at once), and a
// rollout strategy that cannot be read is reported.
func TestRolloutBadInput(t *testing.T) {
	ns := newNamespace(t)
	canaryFirst(t, ns, "groups")
	typo := newPolicy(ns, "typo")
	typo.Spec.RolloutStrategy = perGroup("")
	typo.Spec.RolloutStrategy.ProgressivePerGroup.MandatoryDecisionGroups.MandatoryDecisionGroups[0].GroupName = "canary-typo"
	bad := newPolicy(ns, "bad")
	bad.Spec.RolloutStrategy = perGroup("5m30x") // Note: OCM's schema pattern lets this through
	create(t, typo, bad, newBinding(ns, "b", "groups", policySubject("typo"), policySubject("bad")))

	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		r := rolloutOf(g, t, ns, "typo")
		g.Expect(r.Phase).To(Equal(policyv1.RolloutStopped))
		g.Expect(r.Reason).To(Equal(propagator.ReasonDecisionGroupNotFound))
		g.Expect(r.Message).To(ContainSubstring("[canary-typo]"))
	}).Should(Succeed())
	g.Eventually(func() float64 { // read from the hub's cache at each scrape
		return metricValue("canopy_policy_rollout_stopped",
			map[string]string{"namespace": ns, "policy": "typo", "reason": propagator.ReasonDecisionGroupNotFound})
	}).Should(Equal(1.0))
	expectCondition(t, ns, "bad", propagator.ReasonInvalidRolloutStrategy, `"5m30x"`, "Fix spec.rolloutStrategy")
	g.Eventually(func(g Gomega) {
		g.Expect(rolloutOf(g, t, ns, "bad").Reason).To(Equal(propagator.ReasonInvalidRolloutStrategy))
	}).Should(Succeed())
	g.Consistently(func(g Gomega) {
		for _, name := range []string{"typo", "bad"} {
			g.Expect(replicaClusters(t.Context(), ns, name)).To(BeEmpty())
		}
	}, "1s").Should(Succeed())
}

// TestRolloutFromPolicySet: a PolicySet's strategy applies to its members;
// a member's own strategy (All here) wins.
func TestRolloutFromPolicySet(t *testing.T) {
	ns := newNamespace(t)
	canaryFirst(t, ns, "groups")
	set := newPolicySet(ns, "set", "member", "own")
	set.Spec.RolloutStrategy = perGroup("")
	own := newPolicy(ns, "own")
	own.Spec.RolloutStrategy = &clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.All}
	create(t, set, newPolicy(ns, "member"), own, newBinding(ns, "b", "groups", setSubject("set")))

	expectReplicasOn(t, ns, "own", clusters...)
	expectReplicasOn(t, ns, "member", "cluster-a")
	g := NewWithT(t)
	g.Expect(getPolicy(g, t.Context(), ns, "own").Status.Rollout).To(BeNil())
	report(t, "cluster-a", ns, "member", policyv1.Compliant)
	expectReplicasOn(t, ns, "member", clusters...)
}

// TestRolloutProgressive: Progressive with maxConcurrency 1 updates one
// cluster at a time, in name order.
func TestRolloutProgressive(t *testing.T) {
	ns := newNamespace(t)
	canaryFirst(t, ns, "groups")
	p := newPolicy(ns, "p")
	p.Spec.RolloutStrategy = &clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.Progressive,
		Progressive: &clusterv1alpha1.RolloutProgressive{MaxConcurrency: intstr.FromInt32(1)}}
	create(t, p, newBinding(ns, "b", "groups", policySubject("p")))

	expectReplicasOn(t, ns, "p", "cluster-a")
	report(t, "cluster-a", ns, "p", policyv1.Compliant)
	expectReplicasOn(t, ns, "p", "cluster-a", "cluster-b")
	report(t, "cluster-b", ns, "p", policyv1.Compliant)
	expectReplicasOn(t, ns, "p", clusters...)
}

// buildSteadyRollout adds to ns a root in the middle of a rollout (its
// canary updated and Progressing, production waiting), for the restart
// test, and waits until its status shows it.
func buildSteadyRollout(t *testing.T, ns string) {
	canaryFirst(t, ns, "rollout-groups")
	p := newPolicy(ns, "rolling")
	p.Spec.RolloutStrategy = perGroup("1h")
	create(t, p, newBinding(ns, "rolling", "rollout-groups", policySubject("rolling")))
	expectReplicasOn(t, ns, "rolling", "cluster-a")
	report(t, "cluster-a", ns, "rolling", policyv1.Pending)
	NewWithT(t).Eventually(func(g Gomega) {
		r := rolloutOf(g, t, ns, "rolling")
		g.Expect(states(r)).To(HaveKeyWithValue("cluster-a", policyv1.RolloutClusterProgressing))
		g.Expect(getPolicy(g, t.Context(), ns, "rolling").Status.ComplianceState).To(Equal(policyv1.Pending))
	}).Should(Succeed())
}

// TestRolloutResumesAfterRestart: the rollout's state is in the API: a
// canary that turns Compliant while the hub is down moves the rollout on
// once it is back, and the canary's update time is kept.
func TestRolloutResumesAfterRestart(t *testing.T) {
	ns := newNamespace(t)
	buildSteadyRollout(t, ns)
	g := NewWithT(t)
	before := rolloutOf(g, t, ns, "rolling").Groups[0].Clusters[0]
	g.Expect(before.UpdateTime).NotTo(BeNil())
	restart(t, func() { report(t, "cluster-a", ns, "rolling", policyv1.Compliant) })
	expectReplicasOn(t, ns, "rolling", clusters...)
	g.Eventually(func(g Gomega) {
		a := rolloutOf(g, t, ns, "rolling").Groups[0].Clusters[0]
		g.Expect(a.State).To(Equal(policyv1.RolloutClusterSucceeded))
		g.Expect(a.UpdateTime).To(Equal(before.UpdateTime))
	}).Should(Succeed())
}
