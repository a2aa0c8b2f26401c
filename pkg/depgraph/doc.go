// Package depgraph is the dependency graph of the policies of one cluster
// namespace: which object each dependency of a template names (Resolve),
// the graph Policies and templates form in the namespace (GraphFor,
// BuildGraph), and the cycles on it (Graph.CycleThrough,
// Graph.CycleMessage).
//
// It is a leaf, pure and reading nothing: the agent's templatesync uses it
// to order the templates it writes and to report cycles, and pkg/vet to
// report the same cycles before anything is applied. The text of the cycle
// message is pkg/compliance's (CycleMessage), which pkg/report parses.
package depgraph
