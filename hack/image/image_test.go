package main

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"

	"github.com/canopy-policy/canopy/hack/internal/crossbuild"
)

// moduleRoot is Canopy's module, two levels above this package.
const moduleRoot = "../.."

// builds holds the image built from this tree, once per test run: it
// compiles two binaries for each architecture of testArchitectures.
var builds struct {
	once   sync.Once
	meta   metadata
	layout string
	err    error
}

// builtLayout returns the OCI layout of the image built from this tree and
// the tree's metadata; the first call builds it.
func builtLayout(t *testing.T) (string, metadata) {
	t.Helper()
	builds.once.Do(func() {
		builds.meta, builds.err = metadataOf(context.Background(), moduleRoot)
		if builds.err != nil {
			return
		}
		builds.layout, builds.err = buildInto(context.Background(), builds.meta)
	})
	if builds.err != nil {
		t.Fatalf("building the image: %v", builds.err)
	}
	return builds.layout, builds.meta
}

// buildInto builds the image and writes it as an OCI layout into a new
// directory under the system's temporary directory, removed by TestMain.
func buildInto(ctx context.Context, meta metadata) (string, error) {
	dir, err := os.MkdirTemp(tmpRoot, "layout-")
	if err != nil {
		return "", err
	}
	archs, err := testArchitectures()
	if err != nil {
		return "", err
	}
	start := time.Now()
	idx, err := build(ctx, buildOptions{module: moduleRoot, caBundle: defaultCABundle, meta: meta, architectures: archs})
	if err != nil {
		return "", err
	}
	if err := writeLayout(dir, idx); err != nil {
		return "", err
	}
	log.Printf("Built the image into %s in %s", dir, time.Since(start).Round(time.Second))
	return dir, nil
}

// imagePlatforms are the image's platforms.
func imagePlatforms() []crossbuild.Platform {
	var ps []crossbuild.Platform
	for _, arch := range architectures {
		ps = append(ps, crossbuild.Platform{OS: "linux", Arch: arch})
	}
	return ps
}

// testArchitectures are the architectures the tests build: this
// machine's, or every one with make release-check.
func testArchitectures() ([]string, error) {
	ps, err := crossbuild.ToBuild(imagePlatforms())
	var archs []string
	for _, p := range ps {
		archs = append(archs, p.Arch)
	}
	return archs, err
}

// TestReleaseArchitecturesResolve checks, without compiling, that the
// image's binaries and everything they import resolve for each of its
// platforms, the ones the other tests do not build too.
func TestReleaseArchitecturesResolve(t *testing.T) {
	g := NewWithT(t)
	var pkgs []string
	for _, b := range binaries {
		pkgs = append(pkgs, b.pkg)
	}
	for _, p := range imagePlatforms() {
		g.Expect(crossbuild.Resolve(t.Context(), moduleRoot, p, pkgs...)).To(Succeed())
	}
	g.Expect(architectures).To(ConsistOf("amd64", "arm64"))
}

// tmpRoot holds every layout and tree the tests write.
var tmpRoot string

func TestMain(m *testing.M) {
	var err error
	if tmpRoot, err = os.MkdirTemp("", "canopy-image-test-"); err != nil {
		log.Fatal(err)
	}
	code := m.Run()
	os.RemoveAll(tmpRoot)
	os.Exit(code)
}

// entry is one file of an image or a directory tree, as the comparison
// sees it.
type entry struct {
	mode     fs.FileMode
	uid, gid int
	sha256   string
}

// imageTree reads the files of img's layers, later layers over earlier
// ones, and returns them with their contents.
func imageTree(t *testing.T, img v1.Image) (map[string]entry, map[string][]byte) {
	t.Helper()
	g := NewWithT(t)
	layers, err := img.Layers()
	g.Expect(err).NotTo(HaveOccurred())
	tree, contents := map[string]entry{}, map[string][]byte{}
	cfg, err := img.ConfigFile()
	g.Expect(err).NotTo(HaveOccurred())
	for _, l := range layers {
		rc, err := l.Uncompressed()
		g.Expect(err).NotTo(HaveOccurred())
		tr := tar.NewReader(rc)
		for {
			hdr, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(hdr.ModTime.Equal(cfg.Created.Time)).To(BeTrue(), "%s: mtime %s, image created %s", hdr.Name, hdr.ModTime, cfg.Created)
			name := strings.TrimSuffix(hdr.Name, "/")
			e := entry{mode: hdr.FileInfo().Mode() & (fs.ModeDir | fs.ModePerm), uid: hdr.Uid, gid: hdr.Gid}
			if hdr.Typeflag == tar.TypeReg {
				data, err := io.ReadAll(tr)
				g.Expect(err).NotTo(HaveOccurred())
				sum := sha256.Sum256(data)
				e.sha256, contents[name] = hex.EncodeToString(sum[:]), data
			}
			tree[name] = e
		}
		g.Expect(rc.Close()).To(Succeed())
	}
	return tree, contents
}

// dirTree reads the files under dir as imageTree reads an image, owned by
// root as a Containerfile's COPY without --chown makes them.
func dirTree(t *testing.T, dir string) map[string]entry {
	t.Helper()
	tree := map[string]entry{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		e := entry{mode: info.Mode() & (fs.ModeDir | fs.ModePerm)}
		if !d.IsDir() {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			e.sha256 = hex.EncodeToString(sum[:])
		}
		tree[filepath.ToSlash(rel)] = e
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

// TestImageFromRegistry pushes the image to an in-process registry, pulls
// it back and checks what a cluster would run: its platforms (this
// machine's; all with make release-check), the
// entrypoint, the non-root user and the user database that names it,
// the labels, static binaries for each architecture, and that this
// machine's binaries run.
func TestImageFromRegistry(t *testing.T) {
	g := NewWithT(t)
	dir, meta := builtLayout(t)
	local, err := layout.ImageIndexFromPath(dir)
	g.Expect(err).NotTo(HaveOccurred())

	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	ref := strings.TrimPrefix(srv.URL, "http://") + "/canopy-policy/canopy:test"
	var out strings.Builder
	g.Expect(run(t.Context(), []string{"push", "-layout", dir, "-image", ref}, &out)).To(Succeed())
	digest, err := local.Digest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.String()).To(ContainSubstring("@" + digest.String()))

	tag, err := name.ParseReference(ref)
	g.Expect(err).NotTo(HaveOccurred())
	pulled, err := remote.Index(tag, remote.WithContext(t.Context()))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pulled.Digest()).To(Equal(digest))
	manifest, err := pulled.IndexManifest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(manifest.MediaType).To(BeEquivalentTo("application/vnd.oci.image.index.v1+json"))
	g.Expect(manifest.Annotations).To(Equal(labels(meta)))

	var platforms []string
	for _, desc := range manifest.Manifests {
		platforms = append(platforms, desc.Platform.String())
		img, err := pulled.Image(desc.Digest)
		g.Expect(err).NotTo(HaveOccurred())
		cfg, err := img.ConfigFile()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cfg.Platform().String()).To(Equal(desc.Platform.String()))
		g.Expect(cfg.Config.User).To(Equal("65532:65532"))
		g.Expect(cfg.Config.Entrypoint).To(Equal([]string{"/canopy-hub"}))
		g.Expect(cfg.Config.Labels).To(HaveKeyWithValue("org.opencontainers.image.revision", meta.commit))
		g.Expect(cfg.Config.Labels).To(HaveKeyWithValue("org.opencontainers.image.source", "https://github.com/canopy-policy/canopy"))
		g.Expect(cfg.Config.Labels).To(HaveKeyWithValue("org.opencontainers.image.created", meta.created.Format(time.RFC3339)))
		g.Expect(cfg.Created.Time.Equal(meta.created)).To(BeTrue())

		tree, contents := imageTree(t, img)
		var names []string
		for name, e := range tree {
			names = append(names, name)
			g.Expect([]int{e.uid, e.gid}).To(Equal([]int{0, 0}), "%s is root's", name)
		}
		g.Expect(names).To(ConsistOf("canopy-agent", "canopy-hub", "etc", "etc/group", "etc/passwd",
			"etc/ssl", "etc/ssl/certs", "etc/ssl/certs/ca-certificates.crt"))
		g.Expect(string(contents["etc/passwd"])).To(ContainSubstring("\nnonroot:x:65532:65532:"))
		g.Expect(string(contents["etc/group"])).To(ContainSubstring("\nnonroot:x:65532:"))
		g.Expect(string(contents["etc/ssl/certs/ca-certificates.crt"])).To(HavePrefix("-----BEGIN CERTIFICATE-----"))
		for _, bin := range []string{"canopy-hub", "canopy-agent"} {
			g.Expect(tree[bin].mode).To(Equal(fs.FileMode(0o755)))
			checkStaticELF(t, contents[bin], cfg.Architecture)
			if cfg.OS == runtime.GOOS && cfg.Architecture == runtime.GOARCH {
				runHelp(t, bin, contents[bin])
			}
		}
	}
	archs, err := testArchitectures()
	g.Expect(err).NotTo(HaveOccurred())
	var want []string
	for _, arch := range archs {
		want = append(want, (&v1.Platform{OS: "linux", Architecture: arch, Variant: variant(arch)}).String())
	}
	g.Expect(platforms).To(ConsistOf(want))
	g.Expect(platforms).To(ContainElement(runtime.GOOS+"/"+runtime.GOARCH), "no binary of the image runs on this machine")
}

// checkStaticELF checks that data is a Linux executable for arch with no
// program interpreter: linked statically, as scratch needs.
func checkStaticELF(t *testing.T, data []byte, arch string) {
	t.Helper()
	g := NewWithT(t)
	f, err := elf.NewFile(strings.NewReader(string(data)))
	g.Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]
	g.Expect(f.Machine).To(Equal(machine))
	for _, p := range f.Progs {
		g.Expect(p.Type).NotTo(Equal(elf.PT_INTERP), "the %s binary is dynamically linked", arch)
	}
}

// runHelp runs the binary with --help, as extracted from the image.
func runHelp(t *testing.T, file string, data []byte) {
	t.Helper()
	g := NewWithT(t)
	path := filepath.Join(t.TempDir(), file)
	g.Expect(os.WriteFile(path, data, 0o755)).To(Succeed())
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--help").CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "%s --help: %s", file, out)
	g.Expect(string(out)).To(ContainSubstring("Usage of " + file))
	g.Expect(string(out)).To(ContainSubstring("-kubeconfig"))
}

// TestSameTreeSameDigest builds the image a second time from the same
// tree, compiling anew, and expects the first build's digest.
func TestSameTreeSameDigest(t *testing.T) {
	g := NewWithT(t)
	first, meta := builtLayout(t)
	second, err := buildInto(t.Context(), meta)
	g.Expect(err).NotTo(HaveOccurred())
	digests := make([]v1.Hash, 2)
	for i, dir := range []string{first, second} {
		idx, err := layout.ImageIndexFromPath(dir)
		g.Expect(err).NotTo(HaveOccurred())
		digests[i], err = idx.Digest()
		g.Expect(err).NotTo(HaveOccurred())
		size, err := indexSizes(idx)
		g.Expect(err).NotTo(HaveOccurred())
		t.Logf("Build %d: %s, %s", i+1, digests[i], size)
	}
	g.Expect(digests[1]).To(Equal(digests[0]))
}

// TestLayerIgnoresOrder checks that a layer depends on its files alone, not
// on their order, and lists them sorted with the given time.
func TestLayerIgnoresOrder(t *testing.T) {
	g := NewWithT(t)
	mtime := time.Unix(1700000000, 0).UTC()
	files := baseFiles([]byte("certificates"))
	reversed := make([]file, len(files))
	for i, f := range files {
		reversed[len(files)-1-i] = f
	}
	a, err := layer(files, mtime)
	g.Expect(err).NotTo(HaveOccurred())
	b, err := layer(reversed, mtime)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(b.Digest()).To(Equal(must(a.Digest())))
	c, err := layer(files, mtime.Add(time.Second))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Digest()).NotTo(Equal(must(a.Digest())))

	rc, err := a.Uncompressed()
	g.Expect(err).NotTo(HaveOccurred())
	defer rc.Close()
	tr := tar.NewReader(rc)
	var names []string
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(hdr.ModTime.Equal(mtime)).To(BeTrue())
		names = append(names, hdr.Name)
	}
	g.Expect(names).To(Equal([]string{"etc/", "etc/group", "etc/passwd", "etc/ssl/", "etc/ssl/certs/", "etc/ssl/certs/ca-certificates.crt"}))
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(fmt.Sprint(err))
	}
	return v
}
