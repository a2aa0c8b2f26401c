// Package ocmagents runs OCM's own controllers against a testenv.Env, until
// its Stop: the placement controller on the hub (StartPlacementController),
// which writes the PlacementDecisions of every Placement, and the work agent
// of a managed cluster (StartWorkAgent), which applies the ManifestWorks of
// its cluster namespace.
//
// They run as processes of OCM's own binaries, which
// hack/install-ocm-binaries.sh (make ocm-assets) builds into bin/ocm/<Version>
// outside Canopy's module (AssetsEnv overrides the directory): linking them
// would tie Canopy's Kubernetes and controller-runtime versions to OCM's
// (its openshift/api and library-go). Each process logs to
// env.Dir/logs/<component>.log, not to the test's output; it stops on env.Stop and
// dies with the test process.
//
//	env, err := testenv.Start(ctx, testenv.Options{})
//	...
//	if err := ocmagents.StartPlacementController(ctx, env); err != nil { ... }
//	if err := ocmagents.StartWorkAgents(ctx, env); err != nil { ... }
package ocmagents
