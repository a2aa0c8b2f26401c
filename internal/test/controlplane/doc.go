// Package controlplane starts Kubernetes API servers for tests: each its own
// etcd and kube-apiserver (controller-runtime's envtest), with Canopy's and
// OCM's CRDs and Canopy's admission policies installed. It is the light half
// of the test environment: it links no OCM code beyond OCM's API types, so a
// controller's tests that need one API server stay small and quick to build.
// internal/test/testenv builds the OCM multi-cluster environment (a hub, managed
// clusters, registration, OCM's placement controller and work agent) on it.
//
// The binaries come from bin/k8s/<KubernetesVersion> in this repository
// (hack/install-envtest-assets.sh builds them), or from KUBEBUILDER_ASSETS.
// Connect uses an existing cluster (kind) instead.
//
// A controller package's tests share one control plane through a Suite (see
// its example); Start gives one test its own. Namespace gives each test its
// own namespace, StartManager runs controllers as a binary would, and
// RecordWrites records what they write.
//
// # Leaks
//
// A test that fails, panics, times out or is killed must not leave API
// servers behind. Three guards, from first to last:
//
//   - Stop (Suite.Main, or the test's cleanup) stops the control plane and
//     removes its state; SIGINT and SIGTERM stop every running control plane
//     (and whatever else was given to Track) before the process dies of the
//     signal.
//   - envtest launches etcd and kube-apiserver through a wrapper script that
//     sets the kernel's parent-death signal (setpriv --pdeathsig KILL, or this
//     package's init when setpriv is missing), so they die with the process
//     that started them, however it dies.
//   - Every such process carries CANOPY_TESTENV_OWNER in its environment;
//     each Start (Sweep) kills those whose owner is gone, and removes
//     temporary directories whose owner is gone.
//
// CANOPY_TESTENV_REAPER=setpriv|go|none (ReaperEnv) chooses the second guard.
package controlplane
