package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/canopy-policy/canopy/internal/test/testenv"
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
	if err := inproc.StartAddonManager(ctx, env); err != nil {
		return nil, stopOnError(env, err)
	}
	return env, nil
}

// startJoined starts a hub and the managed clusters as an OCM fleet
// (inproc.JoinFleet): every agent credential is one OCM issued.
func startJoined(ctx context.Context) (*testenv.Env, error) {
	env, err := testenv.Start(ctx, testenv.Options{Unregistered: true})
	if err != nil {
		return nil, err
	}
	if err := inproc.JoinFleet(ctx, env); err != nil {
		return nil, stopOnError(env, err)
	}
	return env, nil
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
