// Package report turns hub objects into what users read about their fleet:
//
//   - Build: the compliance matrix, one row per root policy, one column per
//     managed cluster, each cell the compliance of that policy's replica
//     there, or Excluded where a PolicySet's exclusion keeps the policy off
//     (Render prints it as a table);
//   - Explain: why a root policy is in its state, per cluster and per
//     template, from its replicas' status: unmet dependencies with their
//     reasons, dependency cycles and the latest history, and the clusters
//     PolicySets exclude it from, with their reasons (RenderExplanation;
//     RootExclusions, SetExclusions);
//   - BuildGraph: the dependency graph reachable from a root policy through
//     dependencies, extraDependencies, Policies and PolicySets in any
//     namespace, each node with its state (RenderTree, RenderDOT).
//
// It is pure — it reads objects already fetched — so the demo, the CLI and
// the dashboard share one model and one rendering of the same data. The
// compliance messages it reads, the state and the Pending and cycle
// messages the agent's templatesync writes, are pkg/compliance's (see
// ParsePending and ParseCycle); replica names are pkg/replica's.
package report
