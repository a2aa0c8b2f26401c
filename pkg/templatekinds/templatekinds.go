// Package templatekinds lists the policy template kinds the agent that
// ships evaluates. It is a leaf, so that the two places which tell a user
// about a kind nothing evaluates say the same thing: `kubectl canopy vet`
// (pkg/vet) before a manifest is applied, and the agent's templatesync when
// a template of a kind without a template CRD reaches a managed cluster.
//
// Note: the list must follow pkg/spoke.Evaluators; a kind is added here in
// the change that registers its evaluator there.
package templatekinds

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
)

// evaluated are the kinds Canopy's agent evaluates, in the order they are
// named to users.
var evaluated = []schema.GroupKind{
	{Group: policyv1.GroupName, Kind: policyv1.ConfigurationPolicyKind},
	{Group: policyv1.GroupName, Kind: policyv1.CertificatePolicyKind},
	{Group: policyv1.GroupName, Kind: policyv1beta1.OperatorPolicyKind},
	{Group: hierarchyv1alpha1.GroupName, Kind: hierarchyv1alpha1.HierarchyPolicyKind},
}

// Evaluated returns the policy template kinds Canopy's agent evaluates, as
// a new set the caller may change.
func Evaluated() map[schema.GroupKind]bool {
	out := make(map[schema.GroupKind]bool, len(evaluated))
	for _, gk := range evaluated {
		out[gk] = true
	}
	return out
}

// IsEvaluated reports whether Canopy's agent evaluates templates of gk.
func IsEvaluated(gk schema.GroupKind) bool {
	for _, e := range evaluated {
		if e == gk {
			return true
		}
	}
	return false
}

// List names the evaluated kinds for a message: "ConfigurationPolicy,
// CertificatePolicy, OperatorPolicy, HierarchyPolicy and Gatekeeper's
// ConstraintTemplates and constraints" (IsGatekeeper).
func List() string {
	out := ""
	for _, gk := range evaluated {
		out += gk.Kind + ", "
	}
	return out[:len(out)-2] + " and Gatekeeper's ConstraintTemplates and constraints"
}
