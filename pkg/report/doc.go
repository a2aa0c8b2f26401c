// Package report turns root Policies into the fleet compliance matrix users
// read: one row per policy, one column per managed cluster, each cell the
// compliance of that policy's replica there. It is pure — it reads objects
// already fetched — so the demo, the CLI and the dashboard share one
// rendering of the same data.
package report
