// Package testenv starts OCM multi-cluster environments for tests, the e2e
// suite and the demo: one hub and several managed clusters, each its own API
// server (internal/test/controlplane), started concurrently. Unless
// Options.Unregistered, each managed cluster is registered on the hub by a
// shortcut for controller suites (RegisterCluster): a ManagedCluster, a
// cluster namespace, and an agent identity restricted to that namespace by
// pkg/hubrbac, written directly. SetPlacementDecisions stands in for
// OCM's placement controller.
//
// It links OCM's APIs but none of OCM's components: the demo, the e2e and
// security suites let unregistered clusters join with OCM's own
// registration (internal/test/ocmagents, test/inproc's JoinFleet), which
// runs OCM's processes in the Env's Background. Tests that need one API
// server use internal/test/controlplane instead.
// FromKubeconfigs uses existing clusters (kind) instead of starting any.
//
// A package whose tests share one environment declares a Suite:
//
//	var suite = &testenv.Suite{Options: testenv.Options{}}
//
//	func TestMain(m *testing.M) { suite.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		env := suite.Get(t)
//		ns := controlplane.Namespace(t, env.Hub.Client)
//		agent := env.Cluster("cluster1").HubClient // what cluster1's agent may do on the hub
//		...
//	}
//
// ForTest gives one test its own environment instead. Stop, SIGINT and
// SIGTERM stop everything an Env started, and internal/test/controlplane's leak
// guards stop its API servers however the process dies.
package testenv
