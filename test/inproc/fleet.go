package inproc

import (
	"context"
	"fmt"
	"os"

	"golang.org/x/sync/errgroup"

	"github.com/canopy-policy/canopy/internal/test/ocmagents"
	"github.com/canopy-policy/canopy/internal/test/testenv"
	"github.com/canopy-policy/canopy/pkg/hub/addon"
)

// AgentImage is the image the addon manager of JoinFleet delivers; no
// kubelet runs it here, the tests run the agent themselves.
const AgentImage = "example.com/canopy:test"

// JoinFleet makes the managed clusters of env, started with
// testenv.Options.Unregistered, an OCM fleet, as on a real hub: the hub
// runs kube-controller-manager, OCM's registration controller and addon
// webhook, and Canopy's addon manager (RunAddonManager) until env stops;
// each cluster joins with its registration agent and is accepted as
// `clusteradm accept` does, and gets its work agent; the canopy-policy addon
// is enabled on every cluster, and each cluster's hub fields (HubConfig,
// HubClient, HubKubeconfigPath) hold the addon credential OCM issued.
// Nothing an agent uses is made by testenv.
func JoinFleet(ctx context.Context, env *testenv.Env) error {
	for _, step := range []func(context.Context, *testenv.Env) error{
		ocmagents.StartControllerManager,
		func(ctx context.Context, env *testenv.Env) error {
			return ocmagents.StartRegistrationController(ctx, env, ocmagents.RegistrationOptions{})
		},
		ocmagents.StartAddonWebhook,
		StartAddonManager,
		joinAll,
	} {
		if err := step(ctx, env); err != nil {
			return err
		}
	}
	return nil
}

// joinAll joins every managed cluster of env, enables the addon on it and
// waits for the addon's credential.
func joinAll(ctx context.Context, env *testenv.Env) error {
	var g errgroup.Group
	for _, mc := range env.Managed {
		g.Go(func() error {
			if _, err := ocmagents.Join(ctx, env, mc, true); err != nil {
				return err
			}
			if err := env.EnableAddon(ctx, mc.Name, addon.Name); err != nil {
				return err
			}
			return ocmagents.AddonCredential(ctx, env, mc, addon.Name, addon.DefaultInstallNamespace)
		})
	}
	return g.Wait()
}

// StartAddonManager runs Canopy's addon manager (RunAddonManager) on env's
// hub until env stops.
func StartAddonManager(ctx context.Context, env *testenv.Env) error {
	bctx, goRun := env.Background(ctx)
	running, err := RunAddonManager(bctx, env.Hub.Config, addon.Options{Image: AgentImage})
	if err != nil {
		return err
	}
	goRun(func() {
		<-bctx.Done()
		if err := running.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "inproc: stopping the addon manager:", err)
		}
	})
	return nil
}
