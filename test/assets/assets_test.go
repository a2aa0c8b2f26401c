// Package assets tests the machine-wide cache of built assets
// (hack/lib/assets.sh): the control plane, OCM, Gatekeeper and kubectl are
// built once per machine, outside any checkout, and every checkout's bin/
// links to them.
package assets

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/internal/test/gatekeeper"
	"github.com/canopy-policy/canopy/internal/test/ocmagents"
	"github.com/canopy-policy/canopy/test/conformance"
)

// root is the checkout this test runs in.
const root = "../.."

// scripts are the asset builds, each with the bin/ directory it links and
// a file it must provide there.
var scripts = []struct{ script, dir, file string }{
	{"install-envtest-assets.sh", "k8s/" + controlplane.KubernetesVersion, "kube-apiserver"},
	{"install-ocm-binaries.sh", "ocm/" + ocmagents.Version, "registration"},
	{"install-gatekeeper.sh", "gatekeeper/" + gatekeeper.Version, "manager"},
	{"install-kubectl.sh", "kubectl/" + controlplane.KubernetesVersion, "kubectl"},
	{"install-conformance-suite.sh", "conformance/" + conformance.SuiteVersion, "e2e.test"},
}

// TestSecondCheckoutReusesAssets runs every asset build in a second
// checkout of the scripts, with the machine's cache that make test's
// assets phase filled, and a go command that fails if anything calls it:
// nothing is built, and the second checkout's bin/ links to the same
// files as this one's.
func TestSecondCheckoutReusesAssets(t *testing.T) {
	g := NewWithT(t)
	second := t.TempDir()
	g.Expect(os.CopyFS(filepath.Join(second, "hack"), os.DirFS(filepath.Join(root, "hack")))).To(Succeed())
	noGo := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(noGo, "go"), []byte("#!/bin/sh\necho \"go $* called: an asset was built again\" >&2\nexit 1\n"), 0o755)).To(Succeed())

	for _, s := range scripts {
		mine := filepath.Join(root, "bin", s.dir, s.file)
		if _, err := os.Stat(mine); err != nil {
			t.Fatalf("%s: %v: make test builds the assets before the tests (make envtest-assets ocm-assets gatekeeper-assets kubectl-assets conformance-assets)", s.script, err)
		}
		cmd := exec.CommandContext(t.Context(), "bash", filepath.Join(second, "hack", s.script))
		cmd.Env = append(os.Environ(), "PATH="+noGo+string(os.PathListSeparator)+os.Getenv("PATH"),
			"KUBE_VERSION="+controlplane.KubernetesVersion, "OCM_VERSION="+ocmagents.Version, "GATEKEEPER_VERSION="+gatekeeper.Version,
			"CPC_VERSION="+conformance.SuiteVersion)
		out, err := cmd.CombinedOutput()
		g.Expect(err).NotTo(HaveOccurred(), "%s in a second checkout:\n%s", s.script, out)
		g.Expect(string(out)).To(BeEmpty(), "%s did work in a second checkout", s.script)

		link := filepath.Join(second, "bin", s.dir)
		info, err := os.Lstat(link)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(info.Mode()&os.ModeSymlink).NotTo(BeZero(), "%s is not a link to the cache", link)
		theirs, err := os.Stat(filepath.Join(link, s.file))
		g.Expect(err).NotTo(HaveOccurred())
		ours, err := os.Stat(mine)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(os.SameFile(ours, theirs)).To(BeTrue(), "%s: the second checkout's %s is not this checkout's", s.script, s.file)
	}
}

// assetBegin runs hack/lib/assets.sh's asset_begin for component/key with
// the cache at cache and the checkout at checkout, then script, and
// returns the command (started when wait is false).
func assetBegin(t *testing.T, cache, checkout, component, key, script string) *exec.Cmd {
	t.Helper()
	lib, err := filepath.Abs(filepath.Join(root, "hack", "lib", "assets.sh"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), "bash", "-euo", "pipefail", "-c",
		`root="$1"; source "$2"; asset_begin "$3" "$4"; `+script, "bash", checkout, lib, component, key)
	cmd.Env = append(os.Environ(), "CANOPY_CACHE_DIR="+cache)
	return cmd
}

// TestAssetCache checks asset_begin on its own: an asset a checkout built
// into bin/ before the cache existed moves into the cache; a checkout's
// bin/ links to the cache; two builds of one asset take turns.
func TestAssetCache(t *testing.T) {
	g := NewWithT(t)
	cache, old := t.TempDir(), t.TempDir()
	g.Expect(os.MkdirAll(filepath.Join(old, "bin", "thing", "1.0"), 0o755)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(old, "bin", "thing", "1.0", "tool"), []byte("built before"), 0o644)).To(Succeed())

	out, err := assetBegin(t, cache, old, "thing", "1.0", `echo "$asset_dest"`).CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(out))
	g.Expect(strings.TrimSpace(string(out))).To(Equal(filepath.Join(cache, "thing", "1.0")))
	g.Expect(os.ReadFile(filepath.Join(cache, "thing", "1.0", "tool"))).To(BeEquivalentTo("built before"))
	target, err := os.Readlink(filepath.Join(old, "bin", "thing", "1.0"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(target).To(Equal(filepath.Join(cache, "thing", "1.0")))

	// The first build holds the lock until it is told to finish; the
	// second waits for it, says so, and then finds the first's file.
	first, second := t.TempDir(), t.TempDir()
	release := filepath.Join(t.TempDir(), "release")
	holder := assetBegin(t, cache, first, "thing", "2.0",
		`echo held; while [ ! -e "`+release+`" ]; do sleep 0.1; done; echo made >"$asset_dest/tool"`)
	holderOut, err := holder.StdoutPipe()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(holder.Start()).To(Succeed())
	line, err := bufio.NewReader(holderOut).ReadString('\n')
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(line).To(Equal("held\n")) // the lock is taken

	waiter := assetBegin(t, cache, second, "thing", "2.0", `cat "$asset_dest/tool"`)
	var waiterOut strings.Builder
	waiter.Stdout, waiter.Stderr = &waiterOut, &waiterOut
	g.Expect(waiter.Start()).To(Succeed())
	g.Eventually(waiterOut.String).WithTimeout(time.Minute).Should(ContainSubstring("waiting for another build of thing 2.0"))
	g.Expect(os.WriteFile(release, nil, 0o644)).To(Succeed())
	g.Expect(holder.Wait()).To(Succeed())
	g.Expect(waiter.Wait()).To(Succeed(), waiterOut.String())
	g.Expect(waiterOut.String()).To(HaveSuffix("made\n"))
}
