package propagator

import (
	"cmp"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/sets"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/pkg/replica"
)

// placementKind is the only placementRef kind that selects clusters.
const placementKind = "Placement"

// Cluster is a managed cluster selected for a root policy, with the
// overrides its replica gets: what replica.Build takes.
type Cluster = replica.Cluster

// PlacementInputs is what placement resolution reads: the root policy and
// the objects of its namespace that may bind it.
type PlacementInputs struct {
	// PolicyName is the root policy's name.
	PolicyName string
	// Namespace is the root policy's namespace, where its bindings live.
	Namespace string
	// Disabled is the root policy's spec.disabled.
	Disabled bool
	// Bindings are the PlacementBindings of Namespace, in any order.
	Bindings []policyv1.PlacementBinding
	// PolicySets are the PolicySets of Namespace, by name.
	PolicySets map[string]*policyv1beta1.PolicySet
	// Decisions are, by Placement name, the clusters its PlacementDecisions
	// select. A Placement without PlacementDecisions is absent.
	Decisions map[string][]string
	// Placements are the names of the Placements of Namespace that exist.
	Placements sets.Set[string]
}

// Resolution is the outcome of placement resolution for one root policy.
type Resolution struct {
	// Clusters are the selected clusters, sorted by name.
	Clusters []Cluster
	// Placements is the root policy's status.placement, sorted by binding
	// and policy set. Each entry's decisions are the selected clusters that
	// its binding contributes.
	Placements []policyv1.Placement
	// Problems describe bindings that select nothing for a reason the user
	// should fix, in a stable order.
	Problems []string
	// Bound is true when at least one binding names the policy.
	Bound bool
}

// boundBinding is a binding that names the policy, directly or through
// policy sets.
type boundBinding struct {
	binding *policyv1.PlacementBinding
	// via are the policy sets through which the binding names the policy;
	// "" stands for the policy itself.
	via []string
	// decisions are the clusters of the binding's Placement, sorted.
	decisions []string
}

// ResolvePlacement computes the clusters selected for a root policy, its
// status.placement and the problems of its bindings. Only non-restricted
// bindings select clusters; restricted ones only add their overrides (and
// their status.placement entries) on clusters already selected. A disabled
// policy selects no cluster.
func ResolvePlacement(in PlacementInputs) Resolution {
	var res Resolution
	bound := bindingsOf(in, &res.Problems)
	res.Bound = len(bound) > 0
	selected := sets.New[string]()
	for _, b := range bound {
		if b.binding.SubFilter != policyv1.Restricted && !in.Disabled {
			for _, set := range b.via {
				excluded := ExcludedClusters(in.PolicySets[set], in.PolicyName)
				selected.Insert(filter(b.decisions, func(c string) bool { return !excluded.Has(c) })...)
			}
		}
	}
	enforce := sets.New[string]()
	for _, b := range bound {
		restricted := b.binding.SubFilter == policyv1.Restricted
		if restricted && len(filter(b.decisions, selected.Has)) == 0 {
			continue
		}
		for _, set := range b.via {
			excluded := ExcludedClusters(in.PolicySets[set], in.PolicyName)
			contributed := filter(b.decisions, func(c string) bool { return selected.Has(c) && !excluded.Has(c) })
			if policyv1.RemediationAction(b.binding.BindingOverrides.RemediationAction).IsEnforce() {
				enforce.Insert(contributed...)
			}
			res.Placements = append(res.Placements, placementEntry(b.binding, set, contributed, sets.List(excluded)))
		}
	}
	for _, name := range sets.List(selected) {
		res.Clusters = append(res.Clusters, Cluster{Name: name, Enforce: enforce.Has(name)})
	}
	res.Problems = append(res.Problems, onlyRestricted(bound, in.Disabled)...)
	slices.SortStableFunc(res.Placements, func(a, b policyv1.Placement) int {
		return cmp.Or(cmp.Compare(a.PlacementBinding, b.PlacementBinding), cmp.Compare(a.PolicySet, b.PolicySet))
	})
	return res
}

// onlyRestricted explains a policy bound by restricted bindings alone,
// which therefore selects no cluster.
func onlyRestricted(bound []boundBinding, disabled bool) []string {
	if disabled || len(bound) == 0 || slices.ContainsFunc(bound, func(b boundBinding) bool {
		return b.binding.SubFilter != policyv1.Restricted
	}) {
		return nil
	}
	var out []string
	for _, b := range bound {
		out = append(out, fmt.Sprintf("PlacementBinding %s is restricted (subFilter: restricted): it only overrides the settings of "+
			"clusters that other bindings select; bind the policy with a PlacementBinding without subFilter", b.binding.Name))
	}
	return out
}

// bindingsOf returns the bindings that name the policy, sorted by name, and
// appends to problems what is wrong with them.
func bindingsOf(in PlacementInputs, problems *[]string) []boundBinding {
	bindings := slices.Clone(in.Bindings)
	slices.SortFunc(bindings, func(a, b policyv1.PlacementBinding) int { return cmp.Compare(a.Name, b.Name) })
	var bound []boundBinding
	for i := range bindings {
		pb := &bindings[i]
		via, unknown := SubjectsNaming(pb, in.PolicyName, in.PolicySets)
		for _, s := range unknown {
			*problems = append(*problems, fmt.Sprintf(
				"PlacementBinding %s names %s with kind %q of API group %q, which is ignored: use kind Policy or PolicySet of API group %s",
				pb.Name, s.Name, s.Kind, s.APIGroup, policyv1.GroupName))
		}
		if len(via) == 0 {
			continue
		}
		decisions, problem := bindingDecisions(pb, in)
		// Note: a restricted binding whose placement selects nothing only
		// has nothing to override; that is no problem.
		emptyOverride := pb.SubFilter == policyv1.Restricted && pb.PlacementRef.Kind == placementKind && in.Placements.Has(pb.PlacementRef.Name)
		if problem != "" && !in.Disabled && !emptyOverride {
			*problems = append(*problems, problem)
		}
		bound = append(bound, boundBinding{binding: pb, via: via, decisions: decisions})
	}
	return bound
}

// SubjectsNaming returns through what the binding names the policy: ""
// for the policy itself, or the names of the policy sets listing it (sets
// that do not exist name nothing). It also returns the subjects named like
// the policy whose kind is neither Policy nor PolicySet of the policy API
// group.
func SubjectsNaming(pb *policyv1.PlacementBinding, policy string, policySets map[string]*policyv1beta1.PolicySet) (via []string, unknown []policyv1.Subject) {
	seen := sets.New[string]()
	for _, s := range pb.Subjects {
		switch {
		case s.APIGroup == policyv1.GroupName && s.Kind == policyv1.PolicyKind:
			if s.Name == policy && !seen.Has("") {
				seen.Insert("")
				via = append(via, "")
			}
		case s.APIGroup == policyv1.GroupName && s.Kind == policyv1beta1.PolicySetKind:
			if set := policySets[s.Name]; set != nil && IsMember(set, policy) && !seen.Has(s.Name) {
				seen.Insert(s.Name)
				via = append(via, s.Name)
			}
		default:
			if s.Name == policy {
				unknown = append(unknown, s)
			}
		}
	}
	return via, unknown
}

// IsMember reports whether the policy set lists the policy.
func IsMember(set *policyv1beta1.PolicySet, policy string) bool {
	return slices.Contains(set.Spec.Policies, policyv1.NonEmptyString(policy))
}

// ExcludedClusters returns the clusters that the exclusions of set keep
// policy off (none for a nil set, which stands for a binding naming the
// policy itself).
func ExcludedClusters(set *policyv1beta1.PolicySet, policy string) sets.Set[string] {
	out := sets.New[string]()
	if set == nil {
		return out
	}
	for _, e := range set.Spec.Exclusions {
		if string(e.PolicyName) != policy {
			continue
		}
		for _, c := range e.ClusterNames {
			out.Insert(string(c))
		}
	}
	return out
}

// bindingDecisions returns the clusters of the binding's Placement, and a
// problem when that Placement selects none.
func bindingDecisions(pb *policyv1.PlacementBinding, in PlacementInputs) ([]string, string) {
	ref := pb.PlacementRef
	if ref.Kind != placementKind || ref.APIGroup != clusterv1beta1.GroupName {
		return nil, fmt.Sprintf("PlacementBinding %s refers to %s %s, which Canopy does not support: refer to a Placement of API group %s",
			pb.Name, ref.Kind, ref.Name, clusterv1beta1.GroupName)
	}
	decisions := in.Decisions[ref.Name]
	switch {
	case len(decisions) > 0:
		return decisions, ""
	case !in.Placements.Has(ref.Name):
		return nil, fmt.Sprintf("Placement %s of PlacementBinding %s does not exist: create it in namespace %s",
			ref.Name, pb.Name, in.Namespace)
	default:
		return nil, fmt.Sprintf("Placement %s of PlacementBinding %s has no decisions: check that its cluster sets are bound to namespace %s (ManagedClusterSetBinding) and that clusters match its predicates",
			ref.Name, pb.Name, in.Namespace)
	}
}

// placementEntry is the status.placement entry of a binding, through
// policySet: the clusters it contributes and those the set excludes.
func placementEntry(pb *policyv1.PlacementBinding, policySet string, clusters, excluded []string) policyv1.Placement {
	p := policyv1.Placement{PlacementBinding: pb.Name, PolicySet: policySet}
	for _, c := range excluded {
		p.Exclusions = append(p.Exclusions, policyv1.PolicyExclusion{ClusterName: c})
	}
	if pb.PlacementRef.Kind == placementKind {
		p.Placement = pb.PlacementRef.Name
	} else {
		p.PlacementRule = pb.PlacementRef.Name
	}
	for _, c := range clusters {
		p.Decisions = append(p.Decisions, policyv1.PlacementDecision{ClusterName: c, ClusterNamespace: c})
	}
	return p
}

// ClustersOf returns the cluster names of PlacementDecisions, sorted and
// without duplicates or empty names.
func ClustersOf(decisions []clusterv1beta1.PlacementDecision) []string {
	names := sets.New[string]()
	for i := range decisions {
		for _, d := range decisions[i].Status.Decisions {
			if d.ClusterName != "" {
				names.Insert(d.ClusterName)
			}
		}
	}
	return sets.List(names)
}

func filter(names []string, keep func(string) bool) []string {
	var out []string
	for _, n := range names {
		if keep(n) {
			out = append(out, n)
		}
	}
	return out
}
