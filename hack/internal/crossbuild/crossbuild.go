// Package crossbuild holds what the release tools (hack/image,
// hack/plugin-dist) share about building for other platforms: the
// environment of a reproducible static build, which platforms their tests
// build, and a quick check that a release platform still resolves.
//
// Cross-compiling every binary for every platform takes most of half an
// hour from a cold cache on two cores, so make test builds only this
// machine's platform and resolves the others with go list; make
// release-check (CANOPY_ALL_PLATFORMS=1) builds and checks them all.
package crossbuild

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
)

// AllPlatformsEnv is the variable that makes the release tools' tests
// build every release platform rather than this machine's alone.
const AllPlatformsEnv = "CANOPY_ALL_PLATFORMS"

// Env returns the environment of a static, reproducible build for
// goos/goarch: the caller's, with cgo, GOFLAGS, the instruction-set levels
// and experiments pinned.
func Env(goos, goarch string) []string {
	return append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch,
		"GOFLAGS=", "GOAMD64=v1", "GOARM64=v8.0", "GOEXPERIMENT=")
}

// Platform is one GOOS/GOARCH pair.
type Platform struct{ OS, Arch string }

// String is os/arch, as Go and OCI write a platform.
func (p Platform) String() string { return p.OS + "/" + p.Arch }

// Host is this machine's platform.
func Host() Platform { return Platform{runtime.GOOS, runtime.GOARCH} }

// ToBuild returns the platforms of all that a test builds: all of them
// when AllPlatformsEnv is set, else only this machine's, which must be
// one of them.
func ToBuild(all []Platform) ([]Platform, error) {
	if os.Getenv(AllPlatformsEnv) != "" {
		return all, nil
	}
	for _, p := range all {
		if p == Host() {
			return []Platform{p}, nil
		}
	}
	return nil, fmt.Errorf("this machine's platform %s is not a release platform (%v)", Host(), all)
}

// Resolve checks, with go list and without compiling, that pkgs of the
// module at dir and every package they import resolve for p: each has Go
// files for p and every import is found. It is what make test checks of
// the platforms it does not build.
func Resolve(ctx context.Context, dir string, p Platform, pkgs ...string) error {
	args := append([]string{"list", "-deps", "-e", "-f", "{{with .Error}}{{.}}\n{{end}}{{range .DepsErrors}}{{.}}\n{{end}}"}, pkgs...)
	cmd := exec.CommandContext(ctx, "go", args...) //nolint:gosec // go list of the module's own packages
	cmd.Dir = dir
	cmd.Env = Env(p.OS, p.Arch)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("go list for %s: %w\n%s", p, err, stderr.String())
	}
	if problems := strings.TrimSpace(string(out)); problems != "" {
		return fmt.Errorf("%v do not resolve for %s:\n%s", pkgs, p, problems)
	}
	return nil
}
