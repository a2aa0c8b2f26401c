// Package templating holds what Canopy's hub, agent and CLI share about
// OCM's Go templates, which github.com/stolostron/go-template-utils
// resolves: the hub delimiters, the annotations that carry a resolution's
// outcome from the hub to the agent, the per-cluster encryption key's
// Secret, and the quieting of the library's own log.
//
// It is a leaf: it imports the library and apimachinery only, so that the
// propagator, the agent's controllers and kubectl-canopy agree on these
// names without importing each other.
package templating
