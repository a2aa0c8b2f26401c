package rootstatus

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/pkg/compliance"
)

// AllReporting is the PolicySet statusMessage when every member reports a
// compliance.
const AllReporting = "All policies are reporting status"

// SomeExcluded ends the PolicySet statusMessage when spec.exclusions keeps
// members off some clusters (OCM's message, from governance-policy-propagator
// controllers/policyset/policyset_controller.go).
const SomeExcluded = "One or more policies were excluded. For details, see status.exclusions."

// SelectedClusters returns the clusters of the decisions of a root
// policy's status.placement, sorted and without duplicates: the clusters
// the propagator selected for it.
func SelectedClusters(placements []policyv1.Placement) []string {
	clusters := sets.New[string]()
	for _, p := range placements {
		for _, d := range p.Decisions {
			if d.ClusterName != "" {
				clusters.Insert(d.ClusterName)
			}
		}
	}
	return sets.List(clusters)
}

// ClusterStatuses returns a root policy's status.status: one entry per
// selected cluster, in the order of clusters, with the compliance of the
// cluster's replica (absent from states: unknown) and the bindings that
// place the policy on a cluster a policy set excludes it from (remaining,
// from RemainingBindings).
func ClusterStatuses(clusters []string, states map[string]policyv1.ComplianceState, remaining map[string][]policyv1.RemainingBinding) []policyv1.CompliancePerClusterStatus {
	if len(clusters) == 0 {
		return nil
	}
	out := make([]policyv1.CompliancePerClusterStatus, 0, len(clusters))
	for _, c := range clusters {
		out = append(out, policyv1.CompliancePerClusterStatus{
			ClusterName:       c,
			ClusterNamespace:  c,
			ComplianceState:   compliance.Known(states[c]),
			RemainingBindings: remaining[c],
		})
	}
	return out
}

// RemainingBindings returns, for each cluster that an entry of a root's
// status.placement excludes (through a policy set's exclusion) and that
// other bindings still place the policy on, those bindings, sorted:
// status.status[].remainingBindings.
func RemainingBindings(placements []policyv1.Placement) map[string][]policyv1.RemainingBinding {
	excludedBy := map[string]sets.Set[string]{} // cluster → bindings whose set excludes it
	placedBy := map[string]sets.Set[string]{}   // cluster → bindings that place the policy on it
	for _, p := range placements {
		for _, e := range p.Exclusions {
			addTo(excludedBy, e.ClusterName, p.PlacementBinding)
		}
		for _, d := range p.Decisions {
			addTo(placedBy, d.ClusterName, p.PlacementBinding)
		}
	}
	out := map[string][]policyv1.RemainingBinding{}
	for cluster, excluding := range excludedBy {
		// Note: as OCM, a binding that excludes the cluster is no remaining
		// binding, even when it also names the policy directly.
		for _, b := range sets.List(placedBy[cluster].Difference(excluding)) {
			out[cluster] = append(out[cluster], policyv1.RemainingBinding{PlacementBinding: b})
		}
	}
	return out
}

func addTo(m map[string]sets.Set[string], key, value string) {
	if m[key] == nil {
		m[key] = sets.New[string]()
	}
	m[key].Insert(value)
}

// RootCompliance is a root policy's status.compliant from its status.status.
func RootCompliance(statuses []policyv1.CompliancePerClusterStatus) policyv1.ComplianceState {
	states := make([]policyv1.ComplianceState, 0, len(statuses))
	for _, s := range statuses {
		states = append(states, s.ComplianceState)
	}
	return compliance.Aggregate(states...)
}

// SetStatus is the part of a PolicySet's status that PolicySetStatus computes.
type SetStatus struct {
	Placement     []policyv1beta1.PolicySetStatusPlacement
	Compliant     policyv1.ComplianceState
	StatusMessage string
	Exclusions    []policyv1beta1.PolicySetStatusExclusion
}

// PolicySetStatus computes a PolicySet's status from its members, by name
// (a nil or absent member is missing). A member's compliance is that of its
// root status on the clusters the set's own placements select; disabled and
// missing members do not count.
func PolicySetStatus(set *policyv1beta1.PolicySet, members map[string]*policyv1.Policy) SetStatus {
	if len(set.Spec.Policies) == 0 {
		return SetStatus{}
	}
	var pending, disabled, unknown, missing []string
	var states []policyv1.ComplianceState
	placements := map[string]policyv1beta1.PolicySetStatusPlacement{}
	for _, name := range set.Spec.Policies {
		member := members[string(name)]
		switch {
		case member == nil:
			missing = append(missing, string(name))
			continue
		case member.Spec.Disabled:
			disabled = append(disabled, string(name))
		}
		addSetPlacements(placements, set.Name, member)
		if member.Spec.Disabled {
			continue
		}
		state := memberCompliance(set.Name, member)
		states = append(states, state)
		switch state {
		case "":
			unknown = append(unknown, string(name))
		case policyv1.Pending:
			pending = append(pending, string(name))
		}
	}
	st := SetStatus{Exclusions: SetExclusions(set)}
	st.StatusMessage = statusMessage(pending, disabled, unknown, missing, len(st.Exclusions) > 0)
	st.Compliant = compliance.Aggregate(states...)
	for _, binding := range slices.Sorted(maps.Keys(placements)) {
		st.Placement = append(st.Placement, placements[binding])
	}
	return st
}

// memberCompliance is the member's compliance on the clusters selected
// through the set.
func memberCompliance(set string, member *policyv1.Policy) policyv1.ComplianceState {
	var viaSet []policyv1.Placement
	for _, p := range member.Status.Placement {
		if p.PolicySet == set {
			viaSet = append(viaSet, p)
		}
	}
	clusters := SelectedClusters(viaSet)
	byCluster := map[string]policyv1.ComplianceState{}
	for _, s := range member.Status.Status {
		byCluster[s.ClusterName] = s.ComplianceState
	}
	states := make([]policyv1.ComplianceState, 0, len(clusters))
	for _, c := range clusters {
		states = append(states, byCluster[c])
	}
	return compliance.Aggregate(states...)
}

func addSetPlacements(into map[string]policyv1beta1.PolicySetStatusPlacement, set string, member *policyv1.Policy) {
	for _, p := range member.Status.Placement {
		if p.PolicySet == set {
			into[p.PlacementBinding] = policyv1beta1.PolicySetStatusPlacement{
				PlacementBinding: p.PlacementBinding,
				Placement:        p.Placement,
				PlacementRule:    p.PlacementRule,
			}
		}
	}
}

// SetExclusions is a PolicySet's status.exclusions: its spec.exclusions
// with the clusters sorted, sorted by policy name, as OCM writes them.
func SetExclusions(set *policyv1beta1.PolicySet) []policyv1beta1.PolicySetStatusExclusion {
	var out []policyv1beta1.PolicySetStatusExclusion
	for _, e := range set.Spec.Exclusions {
		if len(e.ClusterNames) == 0 {
			continue
		}
		clusters := slices.Clone(e.ClusterNames)
		slices.Sort(clusters)
		out = append(out, policyv1beta1.PolicySetStatusExclusion{PolicyName: e.PolicyName, Clusters: slices.Compact(clusters)})
	}
	slices.SortStableFunc(out, func(a, b policyv1beta1.PolicySetStatusExclusion) int {
		return strings.Compare(string(a.PolicyName), string(b.PolicyName))
	})
	return out
}

// statusMessage names the members that are Pending, disabled, without
// status or missing, in that order, or says all report; then, when
// excluded, it says members are excluded (SomeExcluded).
func statusMessage(pending, disabled, unknown, missing []string, excluded bool) string {
	var parts []string
	for _, part := range []struct {
		what  string
		names []string
	}{
		{"Policies awaiting pending dependencies", pending},
		{"Disabled policies", disabled},
		{"No status provided while awaiting policy status", unknown},
		{"Missing policies (not found in the namespace of the set)", missing},
	} {
		if len(part.names) > 0 {
			parts = append(parts, fmt.Sprintf("%s: %s", part.what, strings.Join(part.names, ", ")))
		}
	}
	if len(parts) == 0 {
		parts = append(parts, AllReporting)
	}
	if excluded {
		parts = append(parts, SomeExcluded)
	}
	return strings.Join(parts, "; ")
}
