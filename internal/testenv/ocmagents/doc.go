// Package ocmagents runs OCM's own controllers in the test's process against
// a testenv.Env, until its Stop: the placement controller on the hub
// (StartPlacementController), which writes the PlacementDecisions of every
// Placement, and the work agent of a managed cluster (StartWorkAgent), which
// applies the ManifestWorks of its cluster namespace.
//
// It is apart from internal/testenv because it links OCM's work agent and
// placement controller (about 900 packages more): only the demo, the
// e2e addon spec and its own tests need them.
//
//	env, err := testenv.Start(ctx, testenv.Options{})
//	...
//	if err := ocmagents.StartPlacementController(ctx, env); err != nil { ... }
//	if err := ocmagents.StartWorkAgents(ctx, env); err != nil { ... }
package ocmagents
