package ocmagents

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/canopy-policy/canopy/internal/test/controlplane"
)

// Version is the OCM release whose binaries and manifests this package runs:
// hack/install-ocm-binaries.sh (make ocm-assets) builds them into
// bin/ocm/<Version>, outside Canopy's module, so that OCM's dependencies do
// not constrain Canopy's.
const Version = "1.2.0"

// AssetsEnv names the environment variable that overrides the directory of
// OCM's binaries (work, placement) and of their manifests (its manifests/
// subdirectory, at their paths in the ocm module); the default is
// bin/ocm/<Version> in this repository.
const AssetsEnv = "OCM_ASSETS"

// assetsDir returns the directory of OCM's binaries, found as
// internal/test/controlplane finds bin/k8s.
func assetsDir() (string, error) {
	dir := os.Getenv(AssetsEnv)
	if dir == "" {
		root, err := controlplane.RepoRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, "bin", "ocm", Version)
	}
	return filepath.Abs(dir)
}

// binaryPath returns the path of OCM's binary name, which must be there.
func binaryPath(name string) (string, error) {
	dir, err := assetsDir()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, name)
	if info, err := os.Stat(path); err != nil || info.Mode()&0o111 == 0 {
		return "", fmt.Errorf("OCM binary %s not found at %s: run make ocm-assets or set %s", name, path, AssetsEnv)
	}
	return path, nil
}

// readManifest reads the file of the ocm module at path, as
// hack/install-ocm-binaries.sh copied it.
func readManifest(path string) ([]byte, error) {
	dir, err := assetsDir()
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(dir, "manifests", filepath.FromSlash(path)))
	if err != nil {
		return nil, fmt.Errorf("reading OCM's %s: %w (run make ocm-assets or set %s)", path, err, AssetsEnv)
	}
	return data, nil
}
