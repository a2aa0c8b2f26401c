package templatesync

import (
	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/compliance"
	"github.com/canopy-policy/canopy/pkg/depgraph"
)

// Which object each dependency names, and the graph they form, are
// pkg/depgraph's (Resolve, GraphFor); the text of the Pending message is
// pkg/compliance's. This file decides from what the reconciler observed
// which dependencies are not met.

// Observation is what the reconciler found of a dependency's object.
type Observation struct {
	// Unmapped is true when the API server knows no resource for the kind.
	Unmapped bool
	// Found is true when the object exists.
	Found bool
	// Compliance is the object's status.compliant; empty when it has none.
	Compliance policyv1.ComplianceState
}

// Unmet is a dependency that is not satisfied, and why.
type Unmet struct {
	depgraph.Dependency
	// Reason is one of compliance's Unmet* constants or an
	// compliance.UnmetMismatch.
	Reason string
}

// Evaluate returns the dependencies of deps that are not met, given what
// was observed of each (a missing observation means not found).
func Evaluate(deps []depgraph.Dependency, observed map[depgraph.Key]Observation) []Unmet {
	var unmet []Unmet
	for _, d := range deps {
		if reason := unmetReason(d, observed[d.Key]); reason != "" {
			unmet = append(unmet, Unmet{Dependency: d, Reason: reason})
		}
	}
	return unmet
}

func unmetReason(d depgraph.Dependency, o Observation) string {
	switch {
	case o.Unmapped || d.Version == "":
		return compliance.UnmetNoMapping
	case !o.Found:
		return compliance.UnmetNotFound
	case o.Compliance == "":
		return compliance.UnmetNoCompliance
	case o.Compliance != d.Compliance:
		return compliance.UnmetMismatch(d.Compliance, o.Compliance)
	default:
		return ""
	}
}

// PendingMessage returns the compliance message of a template whose
// dependencies unmet are not satisfied, without the leading state
// (compliance.PendingMessage writes it).
func PendingMessage(unmet []Unmet, ignorePending bool) string {
	out := make([]compliance.UnmetDependency, len(unmet))
	for i, u := range unmet {
		out[i] = compliance.UnmetDependency{DependencyRef: u.Ref(), Reason: u.Reason}
	}
	return compliance.PendingMessage(out, ignorePending)
}
