package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/canopy-policy/canopy/internal/testenv"
	"github.com/canopy-policy/canopy/internal/testenv/ocmagents"
	"github.com/canopy-policy/canopy/pkg/hub/addon"
	"github.com/canopy-policy/canopy/test/inproc"
)

// Environment variables naming existing clusters; see the package comment.
const (
	EnvHubKubeconfig      = "E2E_HUB_KUBECONFIG"
	EnvManagedKubeconfigs = "E2E_MANAGED_KUBECONFIGS"
)

// ManagedClusterNames returns the names of the managed clusters the suite
// runs against, known before the environment starts so that specs can be
// generated per cluster.
func ManagedClusterNames() ([]string, error) {
	if os.Getenv(EnvHubKubeconfig) == "" {
		return testenv.DefaultManagedClusters, nil
	}
	names, _, err := parseManaged(os.Getenv(EnvManagedKubeconfigs))
	return names, err
}

// StartEnvironment starts the suite's clusters (see startJoined), or
// connects to existing ones when EnvHubKubeconfig is set. Either way
// Canopy's addon manager runs on the hub until the Env stops, for every
// spec: the specs run the other hub controllers themselves.
func StartEnvironment(ctx context.Context) (*testenv.Env, error) {
	hub := os.Getenv(EnvHubKubeconfig)
	if hub == "" {
		return startJoined(ctx)
	}
	_, managed, err := parseManaged(os.Getenv(EnvManagedKubeconfigs))
	if err != nil {
		return nil, err
	}
	env, err := testenv.FromKubeconfigs(ctx, hub, managed)
	if err != nil {
		return nil, err
	}
	if err := runAddonManager(ctx, env); err != nil {
		return nil, stopOnError(env, err)
	}
	return env, nil
}

// startJoined starts a hub and the managed clusters as an OCM fleet: the
// hub runs kube-controller-manager, OCM's registration controller and
// addon webhook; each cluster joins with its registration agent and gets
// its work agent; the canopy-policy addon is enabled on every cluster, and
// each cluster's hub fields (HubConfig, HubClient) hold the addon
// credential OCM issued. Nothing the agents use is made by testenv.
func startJoined(ctx context.Context) (*testenv.Env, error) {
	env, err := testenv.Start(ctx, testenv.Options{Unregistered: true})
	if err != nil {
		return nil, err
	}
	for _, step := range []func(context.Context, *testenv.Env) error{
		ocmagents.StartControllerManager,
		func(ctx context.Context, env *testenv.Env) error {
			return ocmagents.StartRegistrationController(ctx, env, ocmagents.RegistrationOptions{})
		},
		ocmagents.StartAddonWebhook,
		runAddonManager,
		joinAll,
	} {
		if err := step(ctx, env); err != nil {
			return nil, stopOnError(env, err)
		}
	}
	return env, nil
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

// runAddonManager runs Canopy's addon manager on env's hub until env stops.
func runAddonManager(ctx context.Context, env *testenv.Env) error {
	bctx, goRun := env.Background(ctx)
	running, err := inproc.RunAddonManager(bctx, env.Hub.Config, addon.Options{Image: "example.com/canopy:e2e"})
	if err != nil {
		return err
	}
	goRun(func() {
		<-bctx.Done()
		if err := running.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: stopping the addon manager:", err)
		}
	})
	return nil
}

// stopOnError stops env after err, and returns err with what stopping it
// said.
func stopOnError(env *testenv.Env, err error) error {
	return errors.Join(err, env.Stop())
}

// parseManaged parses "name=path,name=path" into the names, in order, and
// a map from name to path.
func parseManaged(s string) ([]string, map[string]string, error) {
	var names []string
	managed := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		name, path, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || name == "" || path == "" {
			return nil, nil, fmt.Errorf("%s=%q: want name=kubeconfig,name=kubeconfig", EnvManagedKubeconfigs, s)
		}
		if _, dup := managed[name]; dup {
			return nil, nil, fmt.Errorf("%s: cluster %s named twice", EnvManagedKubeconfigs, name)
		}
		names = append(names, name)
		managed[name] = path
	}
	if len(names) < 2 {
		return nil, nil, fmt.Errorf("%s: the suite needs at least two managed clusters", EnvManagedKubeconfigs)
	}
	return names, managed, nil
}
