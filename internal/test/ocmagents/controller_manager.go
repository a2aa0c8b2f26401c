package ocmagents

import (
	"context"
	"fmt"

	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/internal/test/testenv"
)

// StartControllerManager runs kube-controller-manager on env's hub, until
// env.Stop, with only the controllers an OCM hub relies on:
//
//   - CertificateSigningRequest signing and approving: it signs every
//     approved request for the kubernetes.io/kube-apiserver-client signer
//     with the hub's client CA, which the hub's kube-apiserver trusts. OCM's
//     registration (the clusters' hub identities) and addon-framework (the
//     addons' hub identities) ask for their certificates that way.
//   - the garbage collector: objects owned by a deleted object go, as the
//     addon's hub RBAC, owned by its ManagedClusterAddOn, when the addon is
//     disabled or the cluster detached.
//
// It logs to env.Dir/logs/kube-controller-manager.log.
func StartControllerManager(ctx context.Context, env *testenv.Env) error {
	bin, err := controlplane.BinaryPath("kube-controller-manager")
	if err != nil {
		return err
	}
	caCert, caKey, err := env.Hub.ClientCA()
	if err != nil {
		return fmt.Errorf("finding the hub's client CA: %w", err)
	}
	p := process{
		name:  "kube-controller-manager",
		path:  bin,
		plain: true,
		args: []string{
			"--kubeconfig=" + env.Hub.KubeconfigPath,
			"--controllers=csrsigning,csrapproving,garbagecollector",
			"--cluster-signing-kube-apiserver-client-cert-file=" + caCert,
			"--cluster-signing-kube-apiserver-client-key-file=" + caKey,
			"--leader-elect=false",
			"--secure-port=0", // nothing probes it; no serving certificate or authentication lookups
			"--v=2",
		},
		ready: `"Starting certificate controller" name="csrsigning-kube-apiserver-client"`,
	}
	return p.start(ctx, env)
}

// StartClusterControllers runs kube-controller-manager on env's managed
// cluster name, until env.Stop, with the controllers a cluster's own objects
// rely on where no kubelet runs: the namespace controller (a deleted
// namespace is emptied, stays Terminating until then, and goes) and the
// garbage collector (objects owned by a deleted object go). It logs to
// env.Dir/logs/kube-controller-manager-<name>.log.
func StartClusterControllers(ctx context.Context, env *testenv.Env, name string) error {
	bin, err := controlplane.BinaryPath("kube-controller-manager")
	if err != nil {
		return err
	}
	cluster := env.Cluster(name)
	if cluster == nil {
		return fmt.Errorf("no managed cluster %q", name)
	}
	p := process{
		name:  "kube-controller-manager-" + name,
		path:  bin,
		plain: true,
		args: []string{
			"--kubeconfig=" + cluster.KubeconfigPath,
			"--controllers=namespace,garbagecollector",
			"--leader-elect=false",
			"--secure-port=0",
			"--v=2",
		},
		ready: `"Starting namespace controller"`,
	}
	return p.start(ctx, env)
}
