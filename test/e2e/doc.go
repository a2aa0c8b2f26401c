// Package e2e is Canopy's end-to-end suite: a hub and managed clusters, each
// its own API server, exercised through their APIs. It is the only place
// that uses ginkgo.
//
// Each spec is a function taking a func returning an input struct, as in
// Cluster API (APIsServedSpec, AgentRBACSpec): the suite decides which
// clusters a spec runs against, the spec only what it checks. The input
// function is called in BeforeEach, once the environment exists.
//
// By default the suite starts its clusters with internal/test/testenv (a hub,
// cluster1 and cluster2). To run it against existing clusters, for example
// kind clusters (see kind.sh), name their kubeconfigs:
//
//	E2E_HUB_KUBECONFIG=hub.kubeconfig \
//	E2E_MANAGED_KUBECONFIGS=cluster1=c1.kubeconfig,cluster2=c2.kubeconfig \
//	go test ./test/e2e/...
//
// On its own clusters the suite takes about two minutes on 2 cores: the
// hub, two managed clusters, OCM's registration, work and placement
// processes and the agents are started once and shared by the specs, each
// in namespaces and policies of its own; the operator-ordering and
// registration specs start small fleets of their own.
package e2e
