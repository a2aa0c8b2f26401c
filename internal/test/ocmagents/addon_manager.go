package ocmagents

import (
	"context"

	"github.com/canopy-policy/canopy/internal/test/testenv"
)

// StartAddonManager runs OCM's hub addon manager (bin/ocm/<Version>/addon
// manager, as the cluster manager that `clusteradm init` installs runs it)
// against the hub of env until env.Stop. Among its controllers, the one an
// addon installed the OCM way needs: it gives each ManagedClusterAddOn its
// ClusterManagementAddOn as owner, without which an addon's manager
// (addon-framework) skips the ManagedClusterAddOn that `clusteradm addon
// enable` or kubectl created. It logs to env.Dir/logs/addon-manager.log.
func StartAddonManager(ctx context.Context, env *testenv.Env) error {
	p := process{
		name: "addon-manager",
		bin:  "addon",
		args: []string{
			"manager",
			"--kubeconfig=" + env.Hub.KubeconfigPath,
			"--namespace=" + HubNamespace,
			"--disable-leader-election",
		},
		ready: `"Starting worker of controller ..." logger="addon-owner-controller"`,
	}
	return p.start(ctx, env)
}
