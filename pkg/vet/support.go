package vet

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// evaluatedKinds are the policy template kinds Canopy's agent evaluates.
var evaluatedKinds = map[schema.GroupKind]bool{
	configurationPolicyGK: true,
	hierarchyPolicyGK:     true,
}

// policyGroupKinds are the kinds of OCM's policy group Canopy serves.
var policyGroupKinds = map[string]bool{"Policy": true, "PlacementBinding": true, "PolicySet": true, "ConfigurationPolicy": true}

const placementRuleKind = "PlacementRule"

// checkSupport warns of what Canopy does not support in d: policy
// templates of a kind it does not evaluate, other kinds of OCM's policy
// group (OperatorPolicy, CertificatePolicy, ...), and PlacementBindings
// to a PlacementRule.
func checkSupport(d Document, embedded []Document) []Finding {
	var out []Finding
	gk := d.GroupVersionKind().GroupKind()
	switch {
	case gk == policyGK:
		for _, t := range embedded {
			if tgk := t.GroupVersionKind().GroupKind(); tgk.Kind != "" && !evaluatedKinds[tgk] {
				out = append(out, at(t, "kind", SeverityWarning, CheckUnsupported, fmt.Sprintf(
					"Canopy does not evaluate %s templates (it evaluates ConfigurationPolicy and HierarchyPolicy): "+
						"nothing would check this template or report its compliance", tgk.Kind)))
			}
		}
	case gk.Group == policyv1.GroupName && !policyGroupKinds[gk.Kind]:
		out = append(out, at(d, "kind", SeverityWarning, CheckUnsupported, fmt.Sprintf(
			"Canopy does not evaluate %s (it evaluates ConfigurationPolicy and HierarchyPolicy)", gk.Kind)))
	case gk == schema.GroupKind{Group: policyv1.GroupName, Kind: "PlacementBinding"}:
		kind, _, _ := unstructured.NestedString(d.Object, "placementRef", "kind")
		if kind == placementRuleKind {
			name, _, _ := unstructured.NestedString(d.Object, "placementRef", "name")
			out = append(out, at(d, "placementRef.kind", SeverityWarning, CheckUnsupported, fmt.Sprintf(
				"PlacementBinding %s refers to PlacementRule %s, which Canopy does not support: it selects no clusters; "+
					"bind a Placement (apiGroup cluster.open-cluster-management.io, kind Placement) instead", d.Name(), name)))
		}
	}
	return out
}
