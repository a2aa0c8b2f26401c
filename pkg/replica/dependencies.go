package replica

import (
	"cmp"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
)

// PolicySetMembers maps PolicySets to their member policies, for the
// canonicalisation of dependencies.
type PolicySetMembers map[types.NamespacedName][]string

// CanonicalDependencies returns deps as replicas carry them: a Policy
// dependency is named "<namespace>.<name>", like the replica it depends on,
// and has no namespace (the namespace defaults to the root's); a PolicySet
// dependency becomes one Policy dependency per member, with the same
// compliance. A PolicySet absent from members is kept as it is, so that the
// agent reports it missing. Other dependencies are unchanged, duplicates are
// dropped and the order is kept.
func CanonicalDependencies(deps []policyv1.PolicyDependency, rootNamespace string, members PolicySetMembers) []policyv1.PolicyDependency {
	if deps == nil {
		return nil
	}
	out := make([]policyv1.PolicyDependency, 0, len(deps))
	seen := sets.New[policyv1.PolicyDependency]()
	add := func(d policyv1.PolicyDependency) {
		if !seen.Has(d) {
			seen.Insert(d)
			out = append(out, d)
		}
	}
	for _, dep := range deps {
		switch {
		case isPolicyDependency(dep):
			add(canonicalPolicyDependency(dep, rootNamespace))
		case isPolicySetDependency(dep):
			key := types.NamespacedName{Namespace: cmp.Or(dep.Namespace, rootNamespace), Name: dep.Name}
			policies, ok := members[key]
			if !ok {
				add(dep)
				continue
			}
			for _, p := range policies {
				add(policyDependency(key.Namespace+"."+p, dep.Compliance))
			}
		default:
			add(dep)
		}
	}
	return out
}

func canonicalPolicyDependency(dep policyv1.PolicyDependency, rootNamespace string) policyv1.PolicyDependency {
	if dep.Namespace == "" && strings.Count(dep.Name, ".") == 1 {
		return policyDependency(dep.Name, dep.Compliance) // already "<namespace>.<name>"
	}
	return policyDependency(cmp.Or(dep.Namespace, rootNamespace)+"."+dep.Name, dep.Compliance)
}

func policyDependency(name string, compliance policyv1.ComplianceState) policyv1.PolicyDependency {
	return policyv1.PolicyDependency{
		TypeMeta:   metav1.TypeMeta{APIVersion: policyv1.GroupVersion.String(), Kind: policyv1.PolicyKind},
		Name:       name,
		Compliance: compliance,
	}
}

// isPolicyDependency reports whether dep names a Policy: kind Policy of the
// policy API group, or with no apiVersion at all (as OCM's examples often
// do).
func isPolicyDependency(dep policyv1.PolicyDependency) bool {
	return dep.Kind == policyv1.PolicyKind && inPolicyGroup(dep.APIVersion)
}

// isPolicySetDependency reports whether dep names a PolicySet.
func isPolicySetDependency(dep policyv1.PolicyDependency) bool {
	return dep.Kind == policyv1beta1.PolicySetKind && inPolicyGroup(dep.APIVersion)
}

func inPolicyGroup(apiVersion string) bool {
	return apiVersion == "" || strings.HasPrefix(apiVersion, policyv1.GroupName+"/")
}

// PolicySetDependencies returns the PolicySets root depends on, in its spec
// or its templates.
func PolicySetDependencies(root *policyv1.Policy) []types.NamespacedName {
	var out []types.NamespacedName
	visit := func(deps []policyv1.PolicyDependency) {
		for _, d := range deps {
			if isPolicySetDependency(d) {
				out = append(out, types.NamespacedName{Namespace: cmp.Or(d.Namespace, root.Namespace), Name: d.Name})
			}
		}
	}
	visit(root.Spec.Dependencies)
	for _, t := range root.Spec.PolicyTemplates {
		visit(t.ExtraDependencies)
	}
	return out
}
