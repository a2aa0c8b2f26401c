package propagator_test

import (
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/hub/propagator"
)

// decisionsOf returns one PlacementDecision per group of placement "p",
// group i with index i (and no index label when index is "none").
func decisionsOf(index string, groups ...decisionGroup) []*clusterv1beta1.PlacementDecision {
	var out []*clusterv1beta1.PlacementDecision
	for i, g := range groups {
		pd := &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p-" + strconv.Itoa(i),
			Labels: map[string]string{clusterv1beta1.PlacementLabel: "p", clusterv1beta1.DecisionGroupNameLabel: g.name}}}
		if index != "none" {
			pd.Labels[clusterv1beta1.DecisionGroupIndexLabel] = strconv.Itoa(i)
		}
		for _, c := range g.clusters {
			pd.Status.Decisions = append(pd.Status.Decisions, clusterv1beta1.ClusterDecision{ClusterName: c})
		}
		out = append(out, pd)
	}
	return out
}

// previousWith is a previous status.rollout in which cluster-a was updated
// at updated and is in state since then.
func previousWith(state policyv1.RolloutClusterState, updated time.Time) *policyv1.RolloutStatus {
	t := metav1.NewTime(updated)
	return &policyv1.RolloutStatus{Groups: []policyv1.RolloutGroupStatus{{Placement: "p", GroupName: "canary",
		Clusters: []policyv1.RolloutClusterStatus{{Name: "cluster-a", State: state, UpdateTime: &t, LastTransitionTime: &t}}}}}
}

// Note: the rollout handler reads sdk-go's clock, so the plans are made now.
func TestPlanRollout(t *testing.T) {
	planNow := time.Now()
	groups := []decisionGroup{{"canary", []string{"cluster-a"}}, {"production", []string{"cluster-b", "cluster-c"}}}
	updatedA := func(c policyv1.ComplianceState) map[string]propagator.RolloutCluster {
		return map[string]propagator.RolloutCluster{"cluster-a": {Updated: true, Compliance: c, Evaluated: true}, "cluster-b": {}, "cluster-c": {}}
	}
	staleA := map[string]propagator.RolloutCluster{"cluster-a": {Updated: true, Compliance: policyv1.Compliant}, "cluster-b": {}, "cluster-c": {}}
	memberB := func(state policyv1.RolloutClusterState) map[string]map[string]policyv1.RolloutClusterStatus {
		at := metav1.NewTime(planNow.Add(-10 * time.Minute))
		return map[string]map[string]policyv1.RolloutClusterStatus{"op-b": {"cluster-a": {Name: "cluster-a", State: state, UpdateTime: &at, LastTransitionTime: &at}}}
	}
	tolerant := &clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.ProgressivePerGroup, ProgressivePerGroup: &clusterv1alpha1.RolloutProgressivePerGroup{
		RolloutConfig: clusterv1alpha1.RolloutConfig{MaxFailures: intstr.FromInt32(1)}}}
	typo := perGroup("")
	typo.ProgressivePerGroup.MandatoryDecisionGroups.MandatoryDecisionGroups[0].GroupName = "nope"
	for _, tc := range []struct {
		name      string
		strategy  *clusterv1alpha1.RolloutStrategy
		members   map[string]map[string]policyv1.RolloutClusterStatus
		index     string
		clusters  map[string]propagator.RolloutCluster
		previous  *policyv1.RolloutStatus
		toApply   []string
		phase     policyv1.RolloutPhase
		reason    string
		states    map[string]policyv1.RolloutClusterState
		invalid   bool
		recheckIn time.Duration
	}{{
		name: "a new root reaches the canary group first", strategy: perGroup(""),
		clusters: map[string]propagator.RolloutCluster{"cluster-a": {}, "cluster-b": {}, "cluster-c": {}},
		toApply:  []string{"cluster-a"}, phase: policyv1.RolloutProgressing,
	}, {
		name: "a Compliant canary lets production have it", strategy: perGroup(""), clusters: updatedA(policyv1.Compliant),
		previous: previousWith(policyv1.RolloutClusterProgressing, planNow.Add(-time.Minute)),
		toApply:  []string{"cluster-b", "cluster-c"}, phase: policyv1.RolloutProgressing,
		states: map[string]policyv1.RolloutClusterState{"cluster-a": policyv1.RolloutClusterSucceeded, "cluster-b": policyv1.RolloutWaiting},
	}, {
		name: "a canary Compliant while its agent has not evaluated the current generation holds production", strategy: perGroup(""), clusters: staleA,
		previous: previousWith(policyv1.RolloutClusterProgressing, planNow.Add(-time.Minute)), phase: policyv1.RolloutProgressing,
		states: map[string]policyv1.RolloutClusterState{"cluster-a": policyv1.RolloutClusterProgressing},
	}, {
		name: "through a PolicySet, a member not Compliant on the canary holds production", strategy: perGroup(""),
		members: memberB(policyv1.RolloutClusterProgressing), clusters: updatedA(policyv1.Compliant),
		previous: previousWith(policyv1.RolloutClusterProgressing, planNow.Add(-time.Minute)), phase: policyv1.RolloutProgressing,
		states: map[string]policyv1.RolloutClusterState{"cluster-a": policyv1.RolloutClusterSucceeded},
	}, {
		name: "through a PolicySet, every member Compliant on the canary lets production have them", strategy: perGroup(""),
		members: memberB(policyv1.RolloutClusterSucceeded), clusters: updatedA(policyv1.Compliant),
		previous: previousWith(policyv1.RolloutClusterProgressing, planNow.Add(-time.Minute)), phase: policyv1.RolloutProgressing,
		toApply: []string{"cluster-b", "cluster-c"},
	}, {
		name: "through a PolicySet, a member failed on the canary stops the rollout", strategy: perGroup("5m"),
		members: memberB(policyv1.RolloutClusterFailed), clusters: updatedA(policyv1.Compliant),
		previous: previousWith(policyv1.RolloutClusterProgressing, planNow.Add(-time.Minute)),
		phase:    policyv1.RolloutStopped, reason: propagator.ReasonMaxFailuresReached,
		states: map[string]policyv1.RolloutClusterState{"cluster-a": policyv1.RolloutClusterSucceeded},
	}, {
		name: "a Pending canary within the deadline holds production", strategy: perGroup("5m"), clusters: updatedA(policyv1.Pending),
		previous: previousWith(policyv1.RolloutClusterProgressing, planNow.Add(-time.Minute)),
		phase:    policyv1.RolloutProgressing, recheckIn: 4 * time.Minute,
		states: map[string]policyv1.RolloutClusterState{"cluster-a": policyv1.RolloutClusterProgressing},
	}, {
		name: "a canary NonCompliant on the current generation fails at once, without a deadline", strategy: perGroup(""),
		clusters: updatedA(policyv1.NonCompliant), previous: previousWith(policyv1.RolloutClusterProgressing, planNow.Add(-time.Minute)),
		phase: policyv1.RolloutStopped, reason: propagator.ReasonMaxFailuresReached,
		states: map[string]policyv1.RolloutClusterState{"cluster-a": policyv1.RolloutClusterFailed},
	}, {
		name: "a failure within maxFailures lets the next group have it", strategy: tolerant, clusters: updatedA(policyv1.NonCompliant),
		previous: previousWith(policyv1.RolloutClusterProgressing, planNow.Add(-time.Minute)),
		phase:    policyv1.RolloutProgressing, toApply: []string{"cluster-b", "cluster-c"},
		states: map[string]policyv1.RolloutClusterState{"cluster-a": policyv1.RolloutClusterFailed},
	}, {
		name: "a Pending canary past the deadline stops the rollout", strategy: perGroup("5m"), clusters: updatedA(policyv1.Pending),
		previous: previousWith(policyv1.RolloutClusterProgressing, planNow.Add(-10*time.Minute)),
		phase:    policyv1.RolloutStopped, reason: propagator.ReasonMaxFailuresReached,
		states: map[string]policyv1.RolloutClusterState{"cluster-a": policyv1.RolloutClusterFailed},
	}, {
		name: "a mandatory group that does not exist holds every cluster", strategy: typo,
		clusters: map[string]propagator.RolloutCluster{"cluster-a": {}, "cluster-b": {}, "cluster-c": {}},
		phase:    policyv1.RolloutStopped, reason: propagator.ReasonDecisionGroupNotFound,
	}, {
		name: "a deadline that does not parse is invalid", strategy: perGroup("5m30x"), clusters: updatedA(""),
		phase: policyv1.RolloutStopped, reason: propagator.ReasonInvalidRolloutStrategy, invalid: true,
	}, {
		name: "decisions without a group index hold every cluster", strategy: perGroup(""), index: "none", clusters: updatedA(""),
		phase: policyv1.RolloutStopped, reason: propagator.ReasonInvalidDecisionGroups,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			plan := propagator.PlanRollout(propagator.RolloutInputs{
				Placements: []propagator.RolloutPlacement{{Name: "p", Namespace: "ns", Strategy: *tc.strategy, Decisions: decisionsOf(tc.index, groups...),
					PolicySet: map[bool]string{true: "set"}[tc.members != nil], Members: tc.members}},
				Clusters: tc.clusters, Previous: tc.previous, Now: planNow,
			})
			g.Expect(sets.List(plan.ToApply)).To(ConsistOf(tc.toApply))
			g.Expect(plan.Invalid != nil).To(Equal(tc.invalid), "%v", plan.Invalid)
			if tc.recheckIn > 0 {
				g.Expect(plan.RecheckAfter).NotTo(BeNil())
				g.Expect(*plan.RecheckAfter).To(BeNumerically("~", tc.recheckIn, time.Second))
			}
			st := plan.Status(sets.New[string]())
			g.Expect(st.Phase).To(Equal(tc.phase), st.Message)
			g.Expect(st.Reason).To(Equal(tc.reason), st.Message)
			g.Expect(states(st)).To(HaveLen(3))
			for c, s := range tc.states {
				g.Expect(states(st)).To(HaveKeyWithValue(c, s))
			}
		})
	}
}

// TestRolloutStatusIsSteady: planning again from the status it computed
// gives the same status, whatever the time, so a steady hub writes nothing.
func TestRolloutStatusIsSteady(t *testing.T) {
	g := NewWithT(t)
	planNow := time.Now()
	groups := []decisionGroup{{"canary", []string{"cluster-a"}}, {"production", []string{"cluster-b", "cluster-c"}}}
	in := propagator.RolloutInputs{
		Placements: []propagator.RolloutPlacement{{Name: "p", Namespace: "ns", Strategy: *perGroup("1h"), Decisions: decisionsOf("", groups...)}},
		Clusters: map[string]propagator.RolloutCluster{"cluster-a": {Updated: true, Compliance: policyv1.Compliant, Evaluated: true},
			"cluster-b": {}, "cluster-c": {}},
		Now: planNow,
	}
	plan := propagator.PlanRollout(in)
	first := plan.Status(sets.New[string]())
	in.Previous, in.Now = first, planNow.Add(time.Minute)
	again := propagator.PlanRollout(in)
	g.Expect(again.Status(sets.New[string]())).To(Equal(first))

	written := propagator.PlanRollout(in)
	g.Expect(sets.List(written.ToApply)).To(Equal([]string{"cluster-b", "cluster-c"}))
	after := written.Status(written.ToApply)
	g.Expect(states(after)).To(HaveKeyWithValue("cluster-c", policyv1.RolloutClusterProgressing))
	g.Expect(after.Groups[1].Updated).To(BeEquivalentTo(2))
	g.Expect(after.Groups[1].Clusters[1].UpdateTime.Time).To(Equal(in.Now.Truncate(time.Second)))
}
