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
