// Package testenv starts OCM multi-cluster environments for tests, the e2e
// suite and the demo: one hub and several managed clusters, each its own API
// server (internal/controlplane), started concurrently. Each managed cluster
// is registered on the hub as OCM and the Canopy addon would: a
// ManagedCluster, a cluster namespace, and an agent identity restricted to
// that namespace by pkg/hub/agentrbac. SetPlacementDecisions stands in for
// OCM's placement controller.
//
// It links OCM's APIs but none of OCM's controllers: the tests, e2e specs and
// demo that need OCM's placement controller or work agents start them with
// internal/testenv/ocmagents, which runs them in the Env's Background. Tests
// that need one API server use internal/controlplane instead.
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
// SIGTERM stop everything an Env started, and internal/controlplane's leak
// guards stop its API servers however the process dies.
package testenv
