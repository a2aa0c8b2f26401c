package propagator

import (
	"slices"

	"k8s.io/apimachinery/pkg/util/sets"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
)

// ExcludeFromRollouts takes PolicySet exclusions out of the rollouts of a
// root: a cluster the root is not propagated to (selected are the clusters
// ResolvePlacement selected) is dropped from the decisions of its
// Placements, so that its rollout never waits for a replica that will not
// exist; and where a set rolls out as a unit, a member its exclusion keeps
// off a cluster, without an entry of its own there, counts as Succeeded
// there, so that it holds nothing back. It returns new placements; the
// decisions it is given are not changed.
func ExcludeFromRollouts(gated []RolloutPlacement, selected []Cluster, policySets map[string]*policyv1beta1.PolicySet) []RolloutPlacement {
	keep := sets.New[string]()
	for _, c := range selected {
		keep.Insert(c.Name)
	}
	out := make([]RolloutPlacement, 0, len(gated))
	for _, p := range gated {
		p.Decisions = decisionsOnly(p.Decisions, keep)
		if set := policySets[p.PolicySet]; set != nil && len(set.Spec.Exclusions) > 0 {
			p.Members = membersExcluded(p.Members, set)
		}
		out = append(out, p)
	}
	return out
}

// decisionsOnly returns decisions that keep only the clusters of keep: the
// same objects when they have no other, copies otherwise.
func decisionsOnly(decisions []*clusterv1beta1.PlacementDecision, keep sets.Set[string]) []*clusterv1beta1.PlacementDecision {
	out := make([]*clusterv1beta1.PlacementDecision, 0, len(decisions))
	for _, d := range decisions {
		if !slices.ContainsFunc(d.Status.Decisions, func(cd clusterv1beta1.ClusterDecision) bool { return !keep.Has(cd.ClusterName) }) {
			out = append(out, d)
			continue
		}
		c := d.DeepCopy()
		c.Status.Decisions = nil
		for _, cd := range d.Status.Decisions {
			if keep.Has(cd.ClusterName) {
				c.Status.Decisions = append(c.Status.Decisions, cd)
			}
		}
		out = append(out, c)
	}
	return out
}

// membersExcluded returns a copy of members in which a member that set
// excludes from a cluster, and that has no entry there, is Succeeded there.
func membersExcluded(members map[string]map[string]policyv1.RolloutClusterStatus, set *policyv1beta1.PolicySet) map[string]map[string]policyv1.RolloutClusterStatus {
	out := make(map[string]map[string]policyv1.RolloutClusterStatus, len(members))
	for name, entries := range members {
		copied := make(map[string]policyv1.RolloutClusterStatus, len(entries))
		for c, e := range entries {
			copied[c] = e
		}
		for _, c := range sets.List(ExcludedClusters(set, name)) {
			if _, ok := copied[c]; !ok {
				copied[c] = policyv1.RolloutClusterStatus{Name: c, State: policyv1.RolloutClusterSucceeded}
			}
		}
		out[name] = copied
	}
	return out
}
