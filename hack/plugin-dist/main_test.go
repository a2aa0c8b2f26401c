package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"debug/elf"
	"debug/macho"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	"github.com/canopy-policy/canopy/hack/internal/crossbuild"
)

// TestReleasePlatformsResolve checks, without compiling, that
// kubectl-canopy and everything it imports resolve for every platform
// make plugin-dist builds, the ones TestPluginDist does not build too.
func TestReleasePlatformsResolve(t *testing.T) {
	g := NewWithT(t)
	var names []string
	for _, p := range platforms {
		names = append(names, p.String())
		g.Expect(crossbuild.Resolve(t.Context(), "../..", p, "./cmd/kubectl-canopy")).To(Succeed())
	}
	g.Expect(names).To(ConsistOf("linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64"))
}

// TestChoosePlatforms checks -platforms: a subset in the release's order,
// all when empty, and an error naming a platform that is not released.
func TestChoosePlatforms(t *testing.T) {
	g := NewWithT(t)
	g.Expect(choosePlatforms("")).To(Equal(platforms))
	g.Expect(choosePlatforms("linux/arm64, darwin/amd64")).To(Equal([]platform{{OS: "darwin", Arch: "amd64"}, {OS: "linux", Arch: "arm64"}}))
	_, err := choosePlatforms("linux/amd64,windows/amd64")
	g.Expect(err).To(MatchError(ContainSubstring("[windows/amd64] not among")))
}

// TestPluginDist runs make plugin-dist's program and checks what a krew
// user gets: the manifest names an archive per platform with its sha256,
// each archive holds kubectl-canopy for its platform, and this machine's
// prints the version and commit the manifest and the tree say. It builds
// this machine's platform; make release-check builds them all.
func TestPluginDist(t *testing.T) {
	g := NewWithT(t)
	built, err := crossbuild.ToBuild(platforms)
	g.Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, p := range built {
		names = append(names, p.String())
	}
	out := filepath.Join(t.TempDir(), "dist")
	start := time.Now()
	var stdout strings.Builder
	g.Expect(run(t.Context(), []string{"-module", "../..", "-out", out, "-uri-base", "https://example.com/v/", "-platforms", strings.Join(names, ",")}, &stdout)).To(Succeed())
	t.Logf("Built %v in %s", names, time.Since(start).Round(time.Second))
	meta, err := metadataOf(t.Context(), "../..")
	g.Expect(err).NotTo(HaveOccurred())

	data, err := os.ReadFile(filepath.Join(out, "canopy.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var m plugin
	g.Expect(yaml.UnmarshalStrict(data, &m)).To(Succeed())
	g.Expect(m.APIVersion).To(Equal("krew.googlecontainertools.github.com/v1alpha2"))
	g.Expect(m.Kind).To(Equal("Plugin"))
	g.Expect(m.Metadata.Name).To(Equal("canopy"))
	g.Expect(m.Spec.Version).To(MatchRegexp(semver.String()))
	g.Expect(m.Spec.Version).To(Equal(meta.version))
	g.Expect(m.Spec.ShortDescription).NotTo(BeEmpty())

	sums, err := os.ReadFile(filepath.Join(out, "checksums.txt"))
	g.Expect(err).NotTo(HaveOccurred())
	var seen []string
	for _, p := range m.Spec.Platforms {
		goos, arch := p.Selector.MatchLabels["os"], p.Selector.MatchLabels["arch"]
		seen = append(seen, goos+"/"+arch)
		name := binary + "_" + goos + "_" + arch + ".tar.gz"
		g.Expect(p.URI).To(Equal("https://example.com/v/" + name))
		g.Expect(p.Bin).To(Equal(binary))
		g.Expect(p.Files).To(Equal([]fileAction{{From: binary, To: "."}}))
		archive, err := os.ReadFile(filepath.Join(out, name))
		g.Expect(err).NotTo(HaveOccurred())
		sum := sha256.Sum256(archive)
		g.Expect(p.Sha256).To(Equal(hex.EncodeToString(sum[:])))
		g.Expect(string(sums)).To(ContainSubstring(p.Sha256 + "  " + name + "\n"))

		bin := untar(t, archive)
		checkExecutable(t, bin, goos, arch)
		if goos == runtime.GOOS && arch == runtime.GOARCH {
			path := filepath.Join(t.TempDir(), binary)
			g.Expect(os.WriteFile(path, bin, 0o755)).To(Succeed())
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			got, err := exec.CommandContext(ctx, path, "version").CombinedOutput()
			g.Expect(err).NotTo(HaveOccurred(), string(got))
			g.Expect(string(got)).To(Equal("kubectl-canopy " + meta.version + " (commit " + meta.commit + ")\n"))
		}
	}
	g.Expect(seen).To(Equal(names))
	g.Expect(strings.Count(string(sums), "\n")).To(Equal(len(names)))
	g.Expect(seen).To(ContainElement(runtime.GOOS+"/"+runtime.GOARCH), "no archive runs on this machine")
}

// untar returns the one file of a plugin archive, kubectl-canopy,
// executable.
func untar(t *testing.T, archive []byte) []byte {
	t.Helper()
	g := NewWithT(t)
	zr, err := gzip.NewReader(bytes.NewReader(archive))
	g.Expect(err).NotTo(HaveOccurred())
	tr := tar.NewReader(zr)
	var bin []byte
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(hdr.Name).To(Equal(binary))
		g.Expect(hdr.Mode).To(BeEquivalentTo(0o755))
		bin, err = io.ReadAll(tr)
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(bin).NotTo(BeEmpty())
	return bin
}

// checkExecutable checks that bin is an executable for goos/arch.
func checkExecutable(t *testing.T, bin []byte, goos, arch string) {
	t.Helper()
	g := NewWithT(t)
	switch goos {
	case "linux":
		f, err := elf.NewFile(bytes.NewReader(bin))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(f.Machine).To(Equal(map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]))
	case "darwin":
		f, err := macho.NewFile(bytes.NewReader(bin))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(f.Cpu).To(Equal(map[string]macho.Cpu{"amd64": macho.CpuAmd64, "arm64": macho.CpuArm64}[arch]))
	default:
		t.Fatalf("no check for %s", goos)
	}
}

// TestArchiveIsReproducible checks that an archive depends on its binary
// and time alone.
func TestArchiveIsReproducible(t *testing.T) {
	g := NewWithT(t)
	mtime := time.Unix(1700000000, 0)
	a, err := tarGz([]byte("binary"), mtime)
	g.Expect(err).NotTo(HaveOccurred())
	b, err := tarGz([]byte("binary"), mtime)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a).To(Equal(b))
	g.Expect(untar(t, a)).To(Equal([]byte("binary")))
}

func TestMetadataVersionIsSemver(t *testing.T) {
	g := NewWithT(t)
	t.Setenv("VERSION", "")
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	meta, err := metadataOf(t.Context(), "../..")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(meta.version).To(MatchRegexp(semver.String()))
	g.Expect(meta.created).To(Equal(time.Unix(1700000000, 0).UTC()))
	t.Setenv("VERSION", "1.0")
	_, err = metadataOf(t.Context(), "../..")
	g.Expect(err).To(MatchError(ContainSubstring("not a semantic version")))
}
