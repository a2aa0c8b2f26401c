package vet

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/pkg/templatekinds"
)

// policyGroupKinds are the kinds of OCM's policy group Canopy serves: its
// own and the template kinds of the group its agent evaluates.
var policyGroupKinds = func() map[string]bool {
	kinds := map[string]bool{policyv1.PolicyKind: true, policyv1.PlacementBindingKind: true, policyv1beta1.PolicySetKind: true}
	for gk := range templatekinds.Evaluated() {
		if gk.Group == policyv1.GroupName {
			kinds[gk.Kind] = true
		}
	}
	return kinds
}()

const placementRuleKind = "PlacementRule"

// checkSupport warns of what Canopy does not support in d: policy
// templates of a kind its agent does not evaluate (pkg/templatekinds, the
// list the agent's own message names) — Gatekeeper's kinds aside, which the
// agent creates where Gatekeeper is installed and reports on — other kinds of OCM's policy group
// (PolicyAutomation, IamPolicy, ...), and PlacementBindings to a
// PlacementRule.
func checkSupport(d Document, embedded []Document) []Finding {
	var out []Finding
	gk := d.GroupVersionKind().GroupKind()
	switch {
	case gk == policyGK:
		for _, t := range embedded {
			if tgk := t.GroupVersionKind().GroupKind(); tgk.Kind != "" && !templatekinds.IsEvaluated(tgk) && !templatekinds.IsGatekeeper(tgk) {
				out = append(out, at(t, "kind", SeverityWarning, CheckUnsupported, fmt.Sprintf(
					"Canopy does not evaluate %s templates (it evaluates %s): the agent reports this template NonCompliant "+
						"unless another controller on the managed cluster evaluates it and labels its CRD %s=%s",
					tgk.Kind, templatekinds.List(), policyv1.PolicyTypeLabel, policyv1.PolicyTypeTemplate)))
			}
		}
	case gk.Group == policyv1.GroupName && !policyGroupKinds[gk.Kind]:
		out = append(out, at(d, "kind", SeverityWarning, CheckUnsupported, fmt.Sprintf(
			"Canopy does not evaluate %s (it evaluates %s)", gk.Kind, templatekinds.List())))
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
