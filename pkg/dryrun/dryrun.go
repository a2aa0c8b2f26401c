// Package dryrun holds what the agent's planners report when they plan
// without writing (kubectl canopy plan): ConfigurationPolicy evaluation
// and the hierarchical syncer.
package dryrun

// Action is one step of a dry-run plan: what an evaluation would do to an
// object, and why.
type Action struct {
	// Op is what would be done: create, update or delete; or what keeps
	// the object as it is (the planner's own words: noncompliant, conflict,
	// hold).
	Op string `json:"op"`
	// APIVersion and Kind are the object's type.
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Namespace is empty for cluster-scoped objects.
	Namespace string `json:"namespace,omitempty"`
	// Name is the object's name; empty when a template names none.
	Name string `json:"name,omitempty"`
	// Reason says why.
	Reason string `json:"reason"`
	// Object is the object a create or update would write, templates
	// resolved, as Shown shows it, with the values that must not be shown
	// replaced by Redacted. Nil for other actions, and from planners that
	// do not tell.
	Object map[string]any `json:"object,omitempty"`
}
