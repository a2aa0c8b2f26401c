package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
)

// Excluded is how a cell of a cluster a PolicySet's exclusion keeps the
// policy off is shown: the policy is not placed there on purpose.
const Excluded = "excluded"

// Exclusion is a cluster that a PolicySet's spec.exclusions keeps a member
// policy off.
type Exclusion struct {
	// Policy is the excluded member policy, in the set's namespace.
	Policy string `json:"policy"`
	// Cluster is the managed cluster it is excluded from.
	Cluster string `json:"cluster"`
	// PolicySet is the set whose exclusion it is.
	PolicySet string `json:"policySet"`
	// Reason is the exclusion's reason, when the set gives one.
	Reason string `json:"reason,omitempty"`
	// RemainingBindings are the PlacementBindings that place the policy on
	// the cluster all the same (status.status[].remainingBindings); empty
	// when the policy is not on the cluster.
	RemainingBindings []string `json:"remainingBindings,omitempty"`
}

// String says what is excluded, from where, and why, in one line.
func (e Exclusion) String() string {
	s := fmt.Sprintf("%s excluded from %s by PolicySet %s", e.Policy, e.Cluster, e.PolicySet)
	if len(e.RemainingBindings) > 0 {
		s += ", but still placed there by PlacementBinding " + strings.Join(e.RemainingBindings, ", ")
	}
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}

// RootExclusions returns the clusters a root policy's status.placement
// says policy sets exclude it from, sorted by cluster and set, each with
// the reason the set (looked up in sets, by namespace and name) gives and
// the bindings that still place it there.
func RootExclusions(root *policyv1.Policy, sets []policyv1beta1.PolicySet) []Exclusion {
	remaining := map[string][]string{}
	for _, s := range root.Status.Status {
		for _, b := range s.RemainingBindings {
			remaining[s.ClusterName] = append(remaining[s.ClusterName], b.PlacementBinding)
		}
	}
	var out []Exclusion
	for _, p := range root.Status.Placement {
		for _, x := range p.Exclusions {
			e := Exclusion{Policy: root.Name, Cluster: x.ClusterName, PolicySet: p.PolicySet,
				Reason: exclusionReason(sets, root.Namespace, p.PolicySet, root.Name, x.ClusterName), RemainingBindings: remaining[x.ClusterName]}
			if !slices.ContainsFunc(out, func(o Exclusion) bool { return o.Cluster == e.Cluster && o.PolicySet == e.PolicySet }) {
				out = append(out, e)
			}
		}
	}
	slices.SortFunc(out, func(a, b Exclusion) int {
		return cmp.Or(cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.PolicySet, b.PolicySet))
	})
	return out
}

// SetExclusions returns a PolicySet's spec.exclusions, one per policy and
// cluster, in spec order.
func SetExclusions(set *policyv1beta1.PolicySet) []Exclusion {
	var out []Exclusion
	for _, x := range set.Spec.Exclusions {
		for _, c := range x.ClusterNames {
			out = append(out, Exclusion{Policy: string(x.PolicyName), Cluster: string(c), PolicySet: set.Name, Reason: x.Reason})
		}
	}
	return out
}

// exclusionReason is the reason the set namespace/name gives for
// excluding policy from cluster, or "".
func exclusionReason(sets []policyv1beta1.PolicySet, namespace, name, policy, cluster string) string {
	for i := range sets {
		if sets[i].Namespace != namespace || sets[i].Name != name {
			continue
		}
		for _, e := range SetExclusions(&sets[i]) {
			if e.Policy == policy && e.Cluster == cluster {
				return e.Reason
			}
		}
	}
	return ""
}

// excludedOnly returns the clusters of exclusions that no binding places
// the policy on all the same, sorted.
func excludedOnly(exclusions []Exclusion) []string {
	var out []string
	for _, e := range exclusions {
		if len(e.RemainingBindings) == 0 {
			out = append(out, e.Cluster)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
