package propagator

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// Status is the root's status.rollout once the clusters in respecced got
// the current spec in this reconcile: their replicas have a new generation,
// which no agent has evaluated yet. Times are kept from the previous status
// while a cluster stays in its state, so that a steady hub, also after a
// restart, writes nothing.
func (plan *RolloutPlan) Status(respecced sets.Set[string]) *policyv1.RolloutStatus {
	st := &policyv1.RolloutStatus{Phase: policyv1.RolloutSucceeded}
	if len(plan.in.Placements) > 0 {
		st.Type = plan.in.Placements[0].Strategy.Type
	}
	var totals policyv1.RolloutGroupStatus
	for _, g := range plan.groups {
		gs := policyv1.RolloutGroupStatus{Placement: g.placement, GroupName: g.key.GroupName, GroupIndex: g.key.GroupIndex}
		for _, name := range g.clusters {
			c := plan.clusterStatus(name, respecced.Has(name))
			count(&gs, c.State)
			count(&totals, c.State)
			gs.Clusters = append(gs.Clusters, c)
		}
		st.Groups = append(st.Groups, gs)
	}
	switch {
	case plan.stop != "":
		st.Phase, st.Reason, st.Message = policyv1.RolloutStopped, plan.stop, plan.stopMessage
	case totals.Waiting > 0 || totals.Progressing > 0:
		st.Phase = policyv1.RolloutProgressing
		st.Message = progressMessage(st.Groups, totals) + plan.staleMessage(st.Groups)
	default:
		st.Message = fmt.Sprintf("Every one of the %d clusters has the current spec (%d succeeded, %d failed).",
			totals.Updated, totals.Succeeded, totals.Failed)
	}
	return st
}

// clusterStatus is where one cluster stands after this reconcile's writes;
// respecced says whether it got the current spec in this reconcile.
func (plan *RolloutPlan) clusterStatus(name string, respecced bool) policyv1.RolloutClusterStatus {
	c := plan.in.Clusters[name]
	if !c.Updated && !respecced {
		return policyv1.RolloutClusterStatus{Name: name, State: policyv1.RolloutWaiting}
	}
	prev := plan.previous(name)
	out := policyv1.RolloutClusterStatus{Name: name, State: policyv1.RolloutClusterProgressing, UpdateTime: timeOr(prev.UpdateTime, plan.in.Now)}
	switch {
	case respecced: // Note: a new generation, which its agent has not evaluated yet
		out.UpdateTime = timeOr(nil, plan.in.Now)
	case plan.succeeded(name):
		out.State = policyv1.RolloutClusterSucceeded
	case plan.failed.Has(name):
		out.State = policyv1.RolloutClusterFailed
	}
	out.LastTransitionTime = timeOr(nil, plan.in.Now)
	if prev.State == out.State && !respecced {
		out.LastTransitionTime = timeOr(prev.LastTransitionTime, plan.in.Now)
	}
	return out
}

// staleMessage names the Progressing clusters whose replica is Compliant
// while its agent has not reported evaluating the replica's current
// generation, so that a user reading a Compliant replica knows why the
// rollout waits for it.
func (plan *RolloutPlan) staleMessage(groups []policyv1.RolloutGroupStatus) string {
	var stale []string
	for _, g := range groups {
		for _, c := range g.Clusters {
			if in := plan.in.Clusters[c.Name]; c.State == policyv1.RolloutClusterProgressing && !in.Evaluated && in.Compliance == policyv1.Compliant {
				stale = append(stale, c.Name)
			}
		}
	}
	if len(stale) == 0 {
		return ""
	}
	names := strings.Join(stale[:min(len(stale), 5)], ", ")
	if len(stale) > 5 {
		names += fmt.Sprintf(" and %d more", len(stale)-5)
	}
	return fmt.Sprintf(" Compliant only on reports about a previous spec (their agents have not reported evaluating the current "+
		"generation of their replica yet, status.evaluatedGeneration): %s.", names)
}

// count adds a cluster in state to the counts of g.
func count(g *policyv1.RolloutGroupStatus, state policyv1.RolloutClusterState) {
	switch state {
	case policyv1.RolloutWaiting:
		g.Waiting++
		return
	case policyv1.RolloutClusterProgressing:
		g.Progressing++
	case policyv1.RolloutClusterSucceeded:
		g.Succeeded++
	case policyv1.RolloutClusterFailed:
		g.Failed++
	}
	g.Updated++
}

// progressMessage says how far a rollout that goes on has come, and which
// decision group it is at.
func progressMessage(groups []policyv1.RolloutGroupStatus, totals policyv1.RolloutGroupStatus) string {
	msg := fmt.Sprintf("%d of %d clusters have the current spec (%d succeeded, %d progressing, %d failed).",
		totals.Updated, totals.Updated+totals.Waiting, totals.Succeeded, totals.Progressing, totals.Failed)
	for _, g := range groups {
		if g.Progressing > 0 || g.Waiting > 0 {
			return msg + fmt.Sprintf(" The rollout is at decision group %s of Placement %s.", groupName(g), g.Placement)
		}
	}
	return msg
}

// groupName names a decision group by its name, or its index.
func groupName(g policyv1.RolloutGroupStatus) string {
	if g.GroupName != "" {
		return fmt.Sprintf("%q (index %d)", g.GroupName, g.GroupIndex)
	}
	return fmt.Sprintf("index %d", g.GroupIndex)
}

// timeOr is t, or now (to the second, as the API stores it) when t is nil.
func timeOr(t *metav1.Time, now time.Time) *metav1.Time {
	if t != nil {
		return t.DeepCopy()
	}
	return &metav1.Time{Time: now.Truncate(time.Second)}
}

// objectMeta names an object.
func objectMeta(namespace, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: namespace, Name: name}
}

// capitalize upper-cases the first letter of an ASCII word.
func capitalize(word string) string {
	if word == "" {
		return word
	}
	return strings.ToUpper(word[:1]) + word[1:]
}

// joinSorted joins names, which are sorted, with commas.
func joinSorted(names []string) string {
	return strings.Join(names, ", ")
}
