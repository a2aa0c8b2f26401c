package main

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/canopy-policy/canopy/hack/internal/crossbuild"
	"github.com/canopy-policy/canopy/hack/internal/gitmeta"
)

const (
	// caPath is where the image carries the CA certificates (Debian's
	// path, where Go's crypto/x509 looks first on Linux).
	caPath = "etc/ssl/certs/ca-certificates.crt"
	// defaultCABundle is the bundle the image carries unless told
	// otherwise: this machine's, which Debian's ca-certificates package
	// writes.
	defaultCABundle = "/etc/ssl/certs/ca-certificates.crt"
	// nonrootID is the uid and gid the programs run as (distroless's
	// nonroot, which earlier images and users' PodSecurity settings know).
	nonrootID = 65532
	// source is Canopy's repository, for the OCI labels.
	source = "https://github.com/canopy-policy/canopy"
)

var (
	// architectures are the image's platforms, all linux.
	architectures = []string{"amd64", "arm64"}
	// binaries are the image's programs: the file at the image's root and
	// the package compiled into it.
	binaries = []struct{ file, pkg string }{
		{"canopy-hub", "./cmd/hub"},
		{"canopy-agent", "./cmd/spoke"},
	}
	// entrypoint runs the hub; deploy/spoke and the addon's agent
	// Deployment choose /canopy-agent with `command`.
	entrypoint = []string{"/canopy-hub"}
	// user is the image's USER: non-root, numeric, so that runAsNonRoot
	// can verify it without an /etc/passwd lookup.
	user = strconv.Itoa(nonrootID) + ":" + strconv.Itoa(nonrootID)
	// env is the image's environment.
	env = []string{"SSL_CERT_FILE=/" + caPath}
	// passwd and group hold root and the non-root user, which has no home
	// directory and no shell.
	passwd = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nonroot:x:" + strconv.Itoa(nonrootID) + ":" + strconv.Itoa(nonrootID) + ":nonroot:/nonexistent:/sbin/nologin\n"
	group = "root:x:0:\n" +
		"nonroot:x:" + strconv.Itoa(nonrootID) + ":\n"
)

// metadata is what the image says of the tree it was built from.
type metadata struct {
	// commit is the git commit (HEAD).
	commit string
	// version is `git describe --tags --always --dirty`, or $VERSION.
	version string
	// created is $SOURCE_DATE_EPOCH, else the commit's time: every
	// timestamp in the image, so that a commit always gives one digest.
	created time.Time
}

// metadataOf reads the metadata of the git tree at module; $VERSION and
// $SOURCE_DATE_EPOCH override the version and the time.
func metadataOf(ctx context.Context, module string) (metadata, error) {
	var meta metadata
	var err error
	if meta.commit, err = gitmeta.Git(ctx, module, "rev-parse", "HEAD"); err != nil {
		return meta, err
	}
	if meta.version = os.Getenv("VERSION"); meta.version == "" {
		if meta.version, err = gitmeta.Git(ctx, module, "describe", "--tags", "--always", "--dirty", "--match", "v*"); err != nil {
			return meta, err
		}
	}
	meta.created, err = gitmeta.Created(ctx, module)
	return meta, err
}

// labels are the image's OCI labels (and the index's annotations).
func labels(meta metadata) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       "canopy",
		"org.opencontainers.image.description": "Canopy policy hub controller (/canopy-hub) and agent (/canopy-agent)",
		"org.opencontainers.image.source":      source,
		"org.opencontainers.image.url":         source,
		"org.opencontainers.image.revision":    meta.commit,
		"org.opencontainers.image.version":     meta.version,
		"org.opencontainers.image.created":     meta.created.Format(time.RFC3339),
	}
}

// buildOptions say what build builds from.
type buildOptions struct {
	// module is the root of Canopy's module.
	module string
	// caBundle is the file the image carries as caPath.
	caBundle string
	meta     metadata
	// architectures are the platforms to build; nil means all the
	// image's (a test builds this machine's alone).
	architectures []string
}

// build compiles the binaries for every architecture and assembles the
// image index: per platform, the base layer and a layer of the binaries.
func build(ctx context.Context, opts buildOptions) (v1.ImageIndex, error) {
	ca, err := os.ReadFile(opts.caBundle)
	if err != nil {
		return nil, fmt.Errorf("reading the CA certificates: %w", err)
	}
	base, err := layer(baseFiles(ca), opts.meta.created)
	if err != nil {
		return nil, fmt.Errorf("making the base layer: %w", err)
	}
	tmp, err := os.MkdirTemp("", "canopy-image-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(tmp) }() // a leftover temporary directory is no failure
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	archs := opts.architectures
	if archs == nil {
		archs = architectures
	}
	for _, arch := range archs {
		dir := filepath.Join(tmp, arch)
		if err := compile(ctx, opts.module, arch, dir); err != nil {
			return nil, err
		}
		files, err := binaryFiles(dir)
		if err != nil {
			return nil, err
		}
		bins, err := layer(files, opts.meta.created)
		if err != nil {
			return nil, fmt.Errorf("making the %s binaries' layer: %w", arch, err)
		}
		img, err := image(arch, base, bins, opts.meta)
		if err != nil {
			return nil, fmt.Errorf("assembling the %s image: %w", arch, err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: cfg.Platform()}})
	}
	annotated, ok := mutate.Annotations(idx, labels(opts.meta)).(v1.ImageIndex)
	if !ok {
		return nil, fmt.Errorf("annotating the index: not an index")
	}
	return annotated, nil
}

// image is one platform's image: the base layer, then the binaries.
func image(arch string, base, bins v1.Layer, meta metadata) (v1.Image, error) {
	created := v1.Time{Time: meta.created}
	cfg := &v1.ConfigFile{
		Architecture: arch,
		OS:           "linux",
		Variant:      variant(arch),
		Created:      created,
		Config: v1.Config{
			User:       user,
			Entrypoint: entrypoint,
			Env:        env,
			WorkingDir: "/",
			Labels:     labels(meta),
		},
		RootFS: v1.RootFS{Type: "layers"},
	}
	img, err := mutate.ConfigFile(mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON), cfg)
	if err != nil {
		return nil, err
	}
	return mutate.Append(img,
		mutate.Addendum{Layer: base, MediaType: types.OCILayer, History: v1.History{Created: created, CreatedBy: "hack/image: /etc/passwd, /etc/group, /" + caPath}},
		mutate.Addendum{Layer: bins, MediaType: types.OCILayer, History: v1.History{Created: created, CreatedBy: "hack/image: go build -trimpath -buildvcs=false CGO_ENABLED=0 ./cmd/hub ./cmd/spoke"}},
	)
}

// variant is the platform variant OCI indexes conventionally give arch.
func variant(arch string) string {
	if arch == "arm64" {
		return "v8"
	}
	return ""
}

// file is one entry of a layer.
type file struct {
	// name is the path in the image, relative to its root.
	name string
	// mode holds the permissions and fs.ModeDir for a directory.
	mode fs.FileMode
	// data is a regular file's content.
	data []byte
}

// baseFiles are the base layer's files: the user database and the CA
// certificates, everything root's.
func baseFiles(ca []byte) []file {
	dir := fs.ModeDir | 0o755
	return []file{
		{name: "etc", mode: dir},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "etc/ssl", mode: dir},
		{name: "etc/ssl/certs", mode: dir},
		{name: caPath, mode: 0o644, data: ca},
	}
}

// binaryFiles reads the binaries compile wrote into dir.
func binaryFiles(dir string) ([]file, error) {
	var files []file
	for _, b := range binaries {
		data, err := os.ReadFile(filepath.Join(dir, b.file)) //nolint:gosec // the binaries compile wrote
		if err != nil {
			return nil, err
		}
		files = append(files, file{name: b.file, mode: 0o755, data: data})
	}
	return files, nil
}

// layer is a gzipped tar of files sorted by name, owned by root, every
// timestamp mtime: the same files always give the same digest.
func layer(files []file, mtime time.Time) (v1.Layer, error) {
	files = slices.Clone(files)
	slices.SortFunc(files, func(a, b file) int { return strings.Compare(a.name, b.name) })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		hdr := &tar.Header{
			Name:    f.name,
			Mode:    int64(f.mode.Perm()),
			ModTime: mtime,
			Format:  tar.FormatPAX,
		}
		if f.mode.IsDir() {
			hdr.Typeflag, hdr.Name = tar.TypeDir, f.name+"/"
		} else {
			hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// compile builds the binaries for linux/arch into dir: static (no cgo),
// -trimpath, no VCS stamp (the commit is a label; the Containerfile's
// builder has no .git), the baseline instruction set whatever the caller's
// environment says.
func compile(ctx context.Context, module, arch, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil { //nolint:gosec // the image's tree, readable by all as in the image
		return err
	}
	work, err := os.MkdirTemp(dir, ".build-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(work) }() //nolint:gosec // a leftover temporary directory is no failure
	args := []string{"build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w", "-o", work + string(filepath.Separator)}
	for _, b := range binaries {
		args = append(args, b.pkg)
	}
	cmd := exec.CommandContext(ctx, "go", args...) //nolint:gosec // go build of the module's own packages
	cmd.Dir = module
	cmd.Env = crossbuild.Env("linux", arch)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build for linux/%s: %w\n%s", arch, err, out)
	}
	for _, b := range binaries {
		if err := os.Rename(filepath.Join(work, filepath.Base(b.pkg)), filepath.Join(dir, b.file)); err != nil { //nolint:gosec // paths of the directory the caller chose
			return err
		}
	}
	return nil
}

// writeRootFS writes the image's file tree for linux/arch into dir: what
// the Containerfile copies onto scratch.
func writeRootFS(ctx context.Context, module, caBundle, dir, arch string) error {
	ca, err := os.ReadFile(caBundle) //nolint:gosec // the bundle the caller names
	if err != nil {
		return fmt.Errorf("reading the CA certificates: %w", err)
	}
	for _, f := range baseFiles(ca) {
		path := filepath.Join(dir, filepath.FromSlash(f.name))
		if f.mode.IsDir() {
			err = os.MkdirAll(path, f.mode.Perm()) //nolint:gosec // baseFiles' fixed names under the directory the caller chose
		} else {
			err = os.WriteFile(path, f.data, f.mode.Perm()) //nolint:gosec // baseFiles' fixed names under the directory the caller chose
		}
		if err != nil {
			return err
		}
	}
	return compile(ctx, module, arch, dir)
}

// writeLayout replaces dir with an OCI layout whose index.json is idx.
func writeLayout(dir string, idx v1.ImageIndex) error {
	if err := os.RemoveAll(dir); err != nil { //nolint:gosec // the layout directory the caller chose
		return err
	}
	if _, err := layout.Write(dir, idx); err != nil {
		return fmt.Errorf("writing the OCI layout %s: %w", dir, err)
	}
	return nil
}

// sizes are the bytes an image index's blobs take.
type sizes struct {
	// total counts every blob the index references once.
	total int64
	// platforms is what one platform's pull downloads: its manifest,
	// config and compressed layers, by platform.
	platforms map[string]int64
}

// String lists the sizes, platforms sorted.
func (s sizes) String() string {
	out := fmt.Sprintf("%d bytes of blobs", s.total)
	for _, p := range slices.Sorted(maps.Keys(s.platforms)) {
		out += fmt.Sprintf(", %s %d", p, s.platforms[p])
	}
	return out
}

// indexSizes measures the blobs of idx.
func indexSizes(idx v1.ImageIndex) (sizes, error) {
	manifest, err := idx.IndexManifest()
	if err != nil {
		return sizes{}, err
	}
	s := sizes{platforms: map[string]int64{}}
	seen := map[v1.Hash]bool{}
	add := func(platform string, d v1.Descriptor) {
		s.platforms[platform] += d.Size
		if !seen[d.Digest] {
			seen[d.Digest], s.total = true, s.total+d.Size
		}
	}
	for _, desc := range manifest.Manifests {
		platform := desc.Platform.String()
		add(platform, desc)
		img, err := idx.Image(desc.Digest)
		if err != nil {
			return sizes{}, err
		}
		m, err := img.Manifest()
		if err != nil {
			return sizes{}, err
		}
		add(platform, m.Config)
		for _, l := range m.Layers {
			add(platform, l)
		}
	}
	return s, nil
}

// push writes idx to ref, with the credentials of the Docker config
// (docker login, podman login, crane auth login), and returns ref pinned
// by digest.
func push(ctx context.Context, idx v1.ImageIndex, ref string) (string, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return "", fmt.Errorf("parsing image reference %q: %w", ref, err)
	}
	if err := remote.WriteIndex(r, idx, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return "", fmt.Errorf("pushing %s: %w", r, err)
	}
	digest, err := idx.Digest()
	if err != nil {
		return "", err
	}
	return r.Context().Digest(digest.String()).String(), nil
}
