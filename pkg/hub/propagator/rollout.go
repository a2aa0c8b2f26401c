package propagator

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	rolloutsdk "open-cluster-management.io/sdk-go/pkg/apis/cluster/v1alpha1"
	decisionsdk "open-cluster-management.io/sdk-go/pkg/apis/cluster/v1beta1"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// Reasons of status.rollout, when the rollout stopped.
const (
	// ReasonMaxFailuresReached: more clusters of a decision group were not
	// Compliant within the progressDeadline than maxFailures allows (none,
	// in a mandatory decision group).
	ReasonMaxFailuresReached = "MaxFailuresReached"
	// ReasonInvalidRolloutStrategy: the rollout strategy cannot be read;
	// the message says which field.
	ReasonInvalidRolloutStrategy = "InvalidRolloutStrategy"
	// ReasonDecisionGroupNotFound: a mandatory decision group names no
	// decision group of the Placement. Nothing is rolled out through that
	// Placement, rather than everything at once.
	ReasonDecisionGroupNotFound = "DecisionGroupNotFound"
	// ReasonInvalidDecisionGroups: a PlacementDecision of the Placement has
	// no readable decision-group-index label.
	ReasonInvalidDecisionGroups = "InvalidDecisionGroups"
)

// RolloutPlacement is a Placement through which a root policy is rolled
// out under a strategy other than All.
type RolloutPlacement struct {
	// Name is the Placement's name.
	Name string
	// Namespace is the Placement's (and the root's) namespace.
	Namespace string
	// Strategy is the rollout strategy that applies through it.
	Strategy clusterv1alpha1.RolloutStrategy
	// Decisions are the Placement's PlacementDecisions, with their
	// decision-group labels. Nothing may change them.
	Decisions []*clusterv1beta1.PlacementDecision
	// PolicySet names the PolicySet whose strategy applies through the
	// Placement (the root has none of its own): the set's members roll out
	// as a unit. Empty for the root's own strategy.
	PolicySet string
	// Members are, for a PolicySet, where its other members that roll out
	// with it stand: member name → cluster → the cluster's entry in the
	// member's status.rollout. A cluster a member has no entry for is
	// Waiting for that member.
	Members map[string]map[string]policyv1.RolloutClusterStatus

	// memberRollouts are the status.rollout of the members in Members, for
	// the PolicySet's condition.
	memberRollouts map[string]*policyv1.RolloutStatus
}

// RolloutCluster is what the rollout reads of one selected cluster, all of
// it from one read of its replica.
type RolloutCluster struct {
	// Updated is true when the cluster's replica has the current spec.
	Updated bool
	// Compliance is the replica's status.compliant.
	Compliance policyv1.ComplianceState
	// Evaluated is true when the replica's status.evaluatedGeneration is
	// its metadata.generation: the cluster's agent has evaluated every
	// template of the spec the replica has, and Compliance is about it.
	Evaluated bool
}

// RolloutInputs is what PlanRollout reads.
type RolloutInputs struct {
	// Policy is the root policy's name, for messages.
	Policy string
	// Placements are the Placements under a strategy, sorted by name.
	Placements []RolloutPlacement
	// Clusters are the selected clusters whose replica could be prepared,
	// by name; a cluster missing here is neither updated nor writable.
	Clusters map[string]RolloutCluster
	// Previous is the root's status.rollout as last written: the times at
	// which clusters were updated and changed state are kept from it.
	Previous *policyv1.RolloutStatus
	// Now is the time of this reconcile.
	Now time.Time
}

// RolloutPlan is what PlanRollout decides.
type RolloutPlan struct {
	// Gated are the clusters of the Placements under a strategy: they get
	// the current spec only when in ToApply. Other clusters get it at once.
	Gated sets.Set[string]
	// ToApply are the gated clusters that may get the current spec now.
	ToApply sets.Set[string]
	// RecheckAfter is when the rollout must be looked at again without any
	// change (a deadline or a minSuccessTime running out); nil for never.
	RecheckAfter *time.Duration
	// Invalid is the error of a strategy that cannot be read.
	Invalid error

	in     RolloutInputs
	groups []plannedGroup
	// failed are the clusters that reported NonCompliant on the current
	// spec, or were not Compliant within the progressDeadline.
	failed sets.Set[string]
	// stop is the reason the rollout stopped, and its message.
	stop, stopMessage string
	// prev indexes the updated clusters of in.Previous by name.
	prev map[string]policyv1.RolloutClusterStatus
}

// plannedGroup is one decision group of a Placement under a strategy.
type plannedGroup struct {
	placement string
	key       decisionsdk.GroupKey
	clusters  []string
}

// PlanRollout decides, with the rollout handler of OCM's sdk-go, which
// gated clusters may get the current spec of a root policy now. Each
// Placement is planned on its own; a cluster selected by several may be
// updated when one of them allows it.
//
// A cluster whose replica has the current spec stands where its agent's
// report on that spec puts it (evaluatedState): Succeeded when Compliant,
// Failed when NonCompliant (OCM's Failed, which counts against maxFailures
// with or without a progressDeadline), Progressing while the agent has not
// evaluated the spec or reports it Pending; the handler turns a Progressing
// or Failed cluster into a timed-out one once progressDeadline has passed
// since the update. No report time counts: only the generation the agent
// says it evaluated. Through a PolicySet, the cluster's status is that of
// the set's members together (combine).
func PlanRollout(in RolloutInputs) RolloutPlan {
	plan := RolloutPlan{Gated: sets.New[string](), ToApply: sets.New[string](), failed: sets.New[string](), in: in}
	for _, p := range in.Placements {
		plan.planPlacement(p)
	}
	return plan
}

// planPlacement plans the rollout through one Placement.
func (plan *RolloutPlan) planPlacement(p RolloutPlacement) {
	tracker := decisionsdk.NewPlacementDecisionClustersTrackerWithGroups(
		&clusterv1beta1.Placement{ObjectMeta: objectMeta(p.Namespace, p.Name)}, decisionList(p.Decisions), nil)
	if err := tracker.Refresh(); err != nil { // Note: its clusters are held in one group, never updated at once
		clusters := ClustersOf(derefDecisions(p.Decisions))
		plan.groups = append(plan.groups, plannedGroup{placement: p.Name, clusters: clusters})
		plan.Gated.Insert(clusters...)
		plan.stopWith(ReasonInvalidDecisionGroups, fmt.Sprintf("The decisions of Placement %s cannot be read as decision groups (%v): "+
			"check the labels %s and %s of its PlacementDecisions.", p.Name, err, clusterv1beta1.DecisionGroupIndexLabel, clusterv1beta1.DecisionGroupNameLabel))
		return
	}
	groups := tracker.ExistingClusterGroupsBesides()
	for _, key := range groups.GetOrderedGroupKeys() {
		plan.groups = append(plan.groups, plannedGroup{placement: p.Name, key: key, clusters: sets.List(groups[key])})
		plan.Gated.Insert(groups[key].UnsortedList()...)
	}
	if missing := missingGroups(p.Strategy, groups); len(missing) > 0 {
		plan.stopWith(ReasonDecisionGroupNotFound, fmt.Sprintf("The mandatory decision groups %v of the rollout strategy are not decision groups "+
			"of Placement %s, so no cluster of it is updated: name groups of its spec.decisionStrategy.", missing, p.Name))
		return
	}
	handler, err := rolloutsdk.NewRolloutHandler[struct{}](tracker, nil)
	if err != nil {
		plan.stopWith(ReasonInvalidDecisionGroups, err.Error())
		return
	}
	_, res, err := handler.GetRolloutCluster(p.Strategy, plan.handlerStatuses(p, groups.GetClusters()))
	if err != nil {
		plan.Invalid = fmt.Errorf("rollout strategy through Placement %s: %w", p.Name, err)
		plan.stopWith(ReasonInvalidRolloutStrategy, fmt.Sprintf("The rollout strategy cannot be read (%v): fix spec.rolloutStrategy.", err))
		return
	}
	plan.take(p, res)
}

// take records the handler's result for one Placement.
func (plan *RolloutPlan) take(p RolloutPlacement, res rolloutsdk.RolloutResult) {
	for _, c := range res.ClustersToRollout {
		switch c.Status {
		case rolloutsdk.ToApply:
			plan.ToApply.Insert(c.ClusterName)
		case rolloutsdk.Failed:
			plan.failed.Insert(c.ClusterName)
		}
	}
	for _, c := range res.ClustersTimeOut {
		plan.failed.Insert(c.ClusterName)
	}
	if res.MaxFailureBreach {
		failed := filter(sets.List(plan.failed), plan.placementHas(p.Name))
		plan.stopWith(ReasonMaxFailuresReached, plan.maxFailuresMessage(p, failed))
	}
	if d := res.RecheckAfter; d != nil && (plan.RecheckAfter == nil || *d < *plan.RecheckAfter) {
		plan.RecheckAfter = d
	}
}

// handlerStatuses are the rollout statuses of the updated clusters among
// clusters, as the handler reads them; the others are ToApply to it. Through
// a PolicySet, a cluster's status is the set's (combine).
func (plan *RolloutPlan) handlerStatuses(p RolloutPlacement, clusters sets.Set[string]) []rolloutsdk.ClusterRolloutStatus {
	var out []rolloutsdk.ClusterRolloutStatus
	for _, name := range sets.List(clusters) {
		if c, ok := plan.in.Clusters[name]; !ok || !c.Updated {
			continue
		}
		states := []policyv1.RolloutClusterStatus{plan.ownState(name)}
		for _, member := range slices.Sorted(maps.Keys(p.Members)) {
			states = append(states, memberState(p.Members[member], name))
		}
		out = append(out, combine(name, states, plan.in.Now))
	}
	return out
}

// ownState is where an updated cluster stands for the root alone, before
// the progressDeadline is applied, and since when: a Progressing or Failed
// cluster since its update (the deadline counts from it), a Succeeded one
// since it turned so (minSuccessTime counts from it).
func (plan *RolloutPlan) ownState(name string) policyv1.RolloutClusterStatus {
	prev := plan.previous(name)
	st := policyv1.RolloutClusterStatus{Name: name, State: plan.evaluatedState(name), UpdateTime: timeOr(prev.UpdateTime, plan.in.Now)}
	st.LastTransitionTime = st.UpdateTime
	if st.State == policyv1.RolloutClusterSucceeded {
		st.LastTransitionTime = timeOr(nil, plan.in.Now)
		if prev.State == policyv1.RolloutClusterSucceeded {
			st.LastTransitionTime = timeOr(prev.LastTransitionTime, plan.in.Now)
		}
	}
	return st
}

// evaluatedState is where an updated cluster stands by its agent's report
// on the current spec: Succeeded when the replica is Compliant, Failed when
// NonCompliant, Progressing while the agent has not evaluated the replica's
// generation yet or the replica is Pending (an operator installing,
// dependencies not met yet) or of unknown compliance.
func (plan *RolloutPlan) evaluatedState(name string) policyv1.RolloutClusterState {
	c := plan.in.Clusters[name]
	switch {
	case !c.Updated || !c.Evaluated:
		return policyv1.RolloutClusterProgressing
	case c.Compliance == policyv1.Compliant:
		return policyv1.RolloutClusterSucceeded
	case c.Compliance == policyv1.NonCompliant:
		return policyv1.RolloutClusterFailed
	}
	return policyv1.RolloutClusterProgressing
}

// succeeded reports whether an updated cluster has succeeded for the root:
// its agent reported evaluating the replica's current generation, and the
// replica is Compliant.
func (plan *RolloutPlan) succeeded(name string) bool {
	return plan.evaluatedState(name) == policyv1.RolloutClusterSucceeded
}

// memberState is where another member of a PolicySet stands on cluster,
// from its status.rollout: Waiting when that does not show it.
func memberState(entries map[string]policyv1.RolloutClusterStatus, cluster string) policyv1.RolloutClusterStatus {
	if st, ok := entries[cluster]; ok {
		return st
	}
	return policyv1.RolloutClusterStatus{Name: cluster, State: policyv1.RolloutWaiting}
}

// combine is the handler's status of a cluster from where each policy of
// the rollout unit (the root, and the other members of its PolicySet)
// stands on it: Failed when one has failed; else Succeeded when every one
// has succeeded, since the latest of their transitions (minSuccessTime
// counts from it); else Progressing. A cluster not Succeeded is so since
// the earliest update of a policy that has not succeeded, so that the
// first progressDeadline to run out times the cluster out. A policy still
// waiting for the cluster starts no deadline.
func combine(name string, states []policyv1.RolloutClusterStatus, now time.Time) rolloutsdk.ClusterRolloutStatus {
	st := rolloutsdk.ClusterRolloutStatus{ClusterName: name, Status: rolloutsdk.Succeeded}
	var succeededSince, progressingSince *metav1.Time
	failed := false
	for _, s := range states {
		switch {
		case s.State == policyv1.RolloutClusterSucceeded:
			if succeededSince == nil || (s.LastTransitionTime != nil && succeededSince.Before(s.LastTransitionTime)) {
				succeededSince = s.LastTransitionTime
			}
		case s.State == policyv1.RolloutWaiting || s.UpdateTime == nil:
			st.Status = rolloutsdk.Progressing
		default:
			st.Status = rolloutsdk.Progressing
			failed = failed || s.State == policyv1.RolloutClusterFailed
			if progressingSince == nil || s.UpdateTime.Before(progressingSince) {
				progressingSince = s.UpdateTime
			}
		}
	}
	if failed {
		st.Status = rolloutsdk.Failed
	}
	st.LastTransitionTime = timeOr(progressingSince, now)
	if st.Status == rolloutsdk.Succeeded {
		st.LastTransitionTime = timeOr(succeededSince, now)
	}
	return st
}

// previous is the cluster's entry in the previous status.rollout, or an
// empty one.
func (plan *RolloutPlan) previous(cluster string) policyv1.RolloutClusterStatus {
	if plan.prev == nil {
		plan.prev = PreviousEntries(plan.in.Previous)
	}
	return plan.prev[cluster]
}

// PreviousEntries indexes the clusters that a status.rollout shows updated
// (not Waiting) by name.
func PreviousEntries(st *policyv1.RolloutStatus) map[string]policyv1.RolloutClusterStatus {
	out := map[string]policyv1.RolloutClusterStatus{}
	if st == nil {
		return out
	}
	for _, g := range st.Groups {
		for _, c := range g.Clusters {
			if c.State != policyv1.RolloutWaiting {
				out[c.Name] = c
			}
		}
	}
	return out
}

// maxFailuresMessage says why the rollout through p stopped at the failed
// clusters and, through a PolicySet, which of its policies failed where.
func (plan *RolloutPlan) maxFailuresMessage(p RolloutPlacement, failed []string) string {
	verb := map[bool]string{true: "was", false: "were"}[len(failed) == 1]
	what, stopped, next := "", "the rollout stopped", "A cluster that turns Compliant lets it go on; a change to the policy restarts it"
	if p.PolicySet != "" {
		what = fmt.Sprintf(" for every policy of PolicySet %s (not Compliant: %s)", p.PolicySet, strings.Join(plan.notSucceeded(p, failed), ", "))
		stopped = fmt.Sprintf("the rollout of PolicySet %s stopped for each of its policies", p.PolicySet)
		next = "A cluster on which every policy of the set turns Compliant lets it go on; a change to one of them restarts it"
	}
	return fmt.Sprintf("%s %s of Placement %s %s not Compliant%s: NonCompliant on the current spec, or not Compliant within "+
		"the progressDeadline (%s), more than maxFailures allows (mandatory decision groups allow none): %s. %s from the first decision group.",
		capitalize(plural(len(failed), "cluster")), joinSorted(failed), p.Name, verb, what, progressDeadline(p.Strategy), stopped, next)
}

// notSucceeded names, as "policy on cluster", the policies of the rollout
// unit through p that have not succeeded on the clusters.
func (plan *RolloutPlan) notSucceeded(p RolloutPlacement, clusters []string) []string {
	var out []string
	for _, c := range clusters {
		if !plan.succeeded(c) {
			out = append(out, plan.in.Policy+" on "+c)
		}
		for _, member := range slices.Sorted(maps.Keys(p.Members)) {
			if memberState(p.Members[member], c).State != policyv1.RolloutClusterSucceeded {
				out = append(out, member+" on "+c)
			}
		}
	}
	slices.Sort(out)
	return out
}

// placementHas returns whether a cluster is in a decision group of placement.
func (plan *RolloutPlan) placementHas(placement string) func(string) bool {
	return func(cluster string) bool {
		return slices.ContainsFunc(plan.groups, func(g plannedGroup) bool {
			return g.placement == placement && slices.Contains(g.clusters, cluster)
		})
	}
}

// stopWith records the first reason the rollout stopped.
func (plan *RolloutPlan) stopWith(reason, message string) {
	if plan.stop == "" {
		plan.stop, plan.stopMessage = reason, message
	}
}

// missingGroups returns the mandatory decision groups of strategy that
// name no group of groups.
func missingGroups(strategy clusterv1alpha1.RolloutStrategy, groups decisionsdk.ClusterGroupsMap) []string {
	var mandatory []clusterv1alpha1.MandatoryDecisionGroup
	switch {
	case strategy.Type == clusterv1alpha1.Progressive && strategy.Progressive != nil:
		mandatory = strategy.Progressive.MandatoryDecisionGroups.MandatoryDecisionGroups
	case strategy.Type == clusterv1alpha1.ProgressivePerGroup && strategy.ProgressivePerGroup != nil:
		mandatory = strategy.ProgressivePerGroup.MandatoryDecisionGroups.MandatoryDecisionGroups
	}
	var missing []string
	for _, m := range mandatory {
		found := false
		for key := range groups {
			found = found || (m.GroupName != "" && key.GroupName == m.GroupName) || (m.GroupName == "" && key.GroupIndex == m.GroupIndex)
		}
		if !found && m.GroupName != "" {
			missing = append(missing, m.GroupName)
		} else if !found {
			missing = append(missing, fmt.Sprintf("index %d", m.GroupIndex))
		}
	}
	return missing
}

// progressDeadline is the strategy's progressDeadline, "None" when unset.
func progressDeadline(s clusterv1alpha1.RolloutStrategy) string {
	var d string
	switch {
	case s.Progressive != nil && s.Type == clusterv1alpha1.Progressive:
		d = s.Progressive.ProgressDeadline
	case s.ProgressivePerGroup != nil && s.Type == clusterv1alpha1.ProgressivePerGroup:
		d = s.ProgressivePerGroup.ProgressDeadline
	}
	return cmp.Or(d, "None")
}

// derefDecisions copies the decisions, for ClustersOf.
func derefDecisions(decisions []*clusterv1beta1.PlacementDecision) []clusterv1beta1.PlacementDecision {
	out := make([]clusterv1beta1.PlacementDecision, 0, len(decisions))
	for _, d := range decisions {
		out = append(out, *d)
	}
	return out
}

// decisionList is a PlacementDecisionGetter over decisions read from the
// cache.
type decisionList []*clusterv1beta1.PlacementDecision

// List returns the decisions that selector matches in namespace.
func (l decisionList) List(selector labels.Selector, namespace string) ([]*clusterv1beta1.PlacementDecision, error) {
	var out []*clusterv1beta1.PlacementDecision
	for _, d := range l {
		if d.Namespace == namespace && selector.Matches(labels.Set(d.Labels)) {
			out = append(out, d)
		}
	}
	return out, nil
}
