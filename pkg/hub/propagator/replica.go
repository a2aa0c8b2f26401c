package propagator

import (
	"encoding/json"
	"maps"

	"k8s.io/apimachinery/pkg/api/equality"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// What a replica holds (its name, labels, annotations, spec and canonical
// dependencies) is pkg/replica's; the propagator decides when to write it.

// ReplicaUpToDate reports whether existing already has the labels,
// annotations and spec of desired.
func ReplicaUpToDate(desired, existing *policyv1.Policy) bool {
	return mapsEqual(desired.Labels, existing.Labels) &&
		mapsEqual(desired.Annotations, existing.Annotations) &&
		specsEqual(&desired.Spec, &existing.Spec)
}

// TemplatesUpToDate reports whether existing evaluates as desired would:
// the same policy templates under the same remediationAction. A change
// elsewhere (dependencies, metadata) reaches no template object, so no
// evaluator reports on it again.
//
// Note: a dependency that a change adds and that is not met turns the
// replica Pending once its agent sees it; until then it shows the
// compliance of the previous spec.
func TemplatesUpToDate(desired, existing *policyv1.Policy) bool {
	return specsEqual(&policyv1.PolicySpec{PolicyTemplates: desired.Spec.PolicyTemplates, RemediationAction: desired.Spec.RemediationAction},
		&policyv1.PolicySpec{PolicyTemplates: existing.Spec.PolicyTemplates, RemediationAction: existing.Spec.RemediationAction})
}

func mapsEqual(a, b map[string]string) bool {
	return len(a) == len(b) && maps.Equal(a, b)
}

// specsEqual compares specs semantically; it falls back to comparing their
// JSON forms so that an embedded template serialised differently (key
// order, spacing) but meaning the same never causes a write.
func specsEqual(a, b *policyv1.PolicySpec) bool {
	if equality.Semantic.DeepEqual(a, b) {
		return true
	}
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	if errA != nil || errB != nil {
		return false
	}
	var va, vb any
	if json.Unmarshal(ja, &va) != nil || json.Unmarshal(jb, &vb) != nil {
		return false
	}
	return equality.Semantic.DeepEqual(va, vb)
}
