// Package testenv starts Kubernetes control planes for tests, the e2e suite
// and the demo: one hub and several managed clusters, each its own etcd and
// kube-apiserver (controller-runtime's envtest), started concurrently, with
// Canopy's and OCM's CRDs and Canopy's admission policies installed on each.
// Each managed cluster is registered on the hub as OCM and the Canopy addon
// would: a ManagedCluster, a cluster namespace, and an agent identity
// restricted to that namespace by pkg/hub/agentrbac.
//
// The binaries come from bin/k8s/<KubernetesVersion> in this repository
// (hack/install-envtest-assets.sh builds them), or from KUBEBUILDER_ASSETS.
// FromKubeconfigs uses existing clusters (kind) instead.
//
// A package whose tests share one environment starts it in TestMain:
//
//	var env *testenv.Env
//
//	func TestMain(m *testing.M) { testenv.Run(m, testenv.Options{}, &env) }
//
//	func TestSomething(t *testing.T) {
//		ns := testenv.Namespace(t, env.Hub.Client)
//		agent := env.Cluster("cluster1").HubClient // what cluster1's agent may do on the hub
//		...
//	}
//
// ForTest gives one test its own environment instead.
//
// # Leaks
//
// A test that fails, panics, times out or is killed must not leave API
// servers behind. Three guards, from first to last:
//
//   - Stop (t.Cleanup in ForTest, after m.Run in Run) stops everything and
//     removes its state; SIGINT and SIGTERM stop every running control plane
//     before the process dies of the signal.
//   - envtest launches etcd and kube-apiserver through a wrapper script that
//     sets the kernel's parent-death signal (setpriv --pdeathsig KILL, or this
//     package's init when setpriv is missing), so they die with the process
//     that started them, however it dies.
//   - Every such process carries CANOPY_TESTENV_OWNER in its environment;
//     each Start kills those whose owner is gone, and removes temporary
//     directories whose owner is gone.
//
// CANOPY_TESTENV_REAPER=setpriv|go|none chooses the second guard.
package testenv
