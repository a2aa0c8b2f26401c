package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/canopy-policy/canopy/internal/testenv"
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

// StartEnvironment starts the suite's clusters with internal/testenv, or
// connects to existing ones when EnvHubKubeconfig is set.
func StartEnvironment(ctx context.Context) (*testenv.Env, error) {
	hub := os.Getenv(EnvHubKubeconfig)
	if hub == "" {
		return testenv.Start(ctx, testenv.Options{})
	}
	_, managed, err := parseManaged(os.Getenv(EnvManagedKubeconfigs))
	if err != nil {
		return nil, err
	}
	return testenv.FromKubeconfigs(ctx, hub, managed)
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
