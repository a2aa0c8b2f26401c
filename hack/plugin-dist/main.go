// Command plugin-dist builds kubectl-canopy for users to install as a
// kubectl plugin: one archive per platform (linux and darwin, amd64 and
// arm64) with the binary, their sha256 sums, and the krew manifest that
// points at them (make plugin-dist).
//
//	go run ./hack/plugin-dist -out bin/dist
//
// Upload the archives as the release's assets (the manifest's URIs are
// -uri-base/<archive>), then `kubectl krew install --manifest
// bin/dist/canopy.yaml`, or submit the manifest to a krew index.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/canopy-policy/canopy/hack/internal/crossbuild"
	"github.com/canopy-policy/canopy/hack/internal/gitmeta"
)

// platform is one OS and architecture the plugin ships for.
type platform = crossbuild.Platform

// platforms are the platforms kubectl-canopy ships for.
var platforms = []platform{{OS: "darwin", Arch: "amd64"}, {OS: "darwin", Arch: "arm64"}, {OS: "linux", Arch: "amd64"}, {OS: "linux", Arch: "arm64"}}

// binary is the plugin's executable: kubectl finds `kubectl canopy` as
// kubectl-canopy on the PATH.
const binary = "kubectl-canopy"

// repository is Canopy's repository, whose releases hold the archives.
const repository = "https://github.com/canopy-policy/canopy"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "Error:", err)
		}
		os.Exit(1)
	}
}

// options say what to build and where the archives will be served from.
type options struct {
	module, out, uriBase string
	meta                 metadata
	// platforms are the platforms built, a subset of the package's
	// platforms in their order (the tests build this machine's alone).
	platforms []platform
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("plugin-dist", flag.ContinueOnError)
	opts := options{}
	fs.StringVar(&opts.module, "module", ".", "Root of Canopy's module (where go.mod is).")
	fs.StringVar(&opts.out, "out", "bin/dist", "Directory to write the archives, checksums.txt and canopy.yaml into (replaced).")
	fs.StringVar(&opts.uriBase, "uri-base", "", "URL the archives are downloaded from; empty means the GitHub release of the version.")
	only := fs.String("platforms", "", "Comma-separated os/arch pairs to build, of "+fmt.Sprint(platforms)+"; empty means all.")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var err error
	if opts.platforms, err = choosePlatforms(*only); err != nil {
		return err
	}
	meta, err := metadataOf(ctx, opts.module)
	if err != nil {
		return err
	}
	opts.meta = meta
	if opts.uriBase == "" {
		opts.uriBase = repository + "/releases/download/" + meta.version
	}
	if err := dist(ctx, opts); err != nil {
		return err
	}
	fmt.Fprintf(out, "Wrote %s: kubectl-canopy %s (commit %s) for %d platforms, checksums.txt and the krew manifest canopy.yaml\n",
		opts.out, meta.version, meta.commit, len(opts.platforms))
	return nil
}

// choosePlatforms returns the platforms named in list (os/arch, comma
// separated) in the order of platforms, or all of them when list is empty.
func choosePlatforms(list string) ([]platform, error) {
	if list == "" {
		return platforms, nil
	}
	wanted := map[string]bool{}
	for _, name := range strings.Split(list, ",") {
		wanted[strings.TrimSpace(name)] = true
	}
	var chosen []platform
	for _, p := range platforms {
		if wanted[p.String()] {
			chosen = append(chosen, p)
			delete(wanted, p.String())
		}
	}
	if len(wanted) > 0 {
		return nil, fmt.Errorf("-platforms: %v not among %v", slices.Sorted(maps.Keys(wanted)), platforms)
	}
	return chosen, nil
}

// metadata is what the plugin says of the tree it was built from.
type metadata struct {
	// version is a semantic version (krew requires one): $VERSION, else
	// the v* tag at HEAD, else v0.0.0-<commit time>-<commit>, as Go
	// writes pseudo-versions.
	version string
	// commit is HEAD, with "-dirty" when the tree has changes.
	commit string
	// created is $SOURCE_DATE_EPOCH, else the commit's time: the archives'
	// timestamps.
	created time.Time
}

// semver is the form krew accepts for spec.version.
var semver = regexp.MustCompile(`^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

// metadataOf reads the metadata of the git tree at module.
func metadataOf(ctx context.Context, module string) (metadata, error) {
	var meta metadata
	head, err := gitmeta.Git(ctx, module, "rev-parse", "HEAD")
	if err != nil {
		return meta, err
	}
	meta.commit = head
	if status, err := gitmeta.Git(ctx, module, "status", "--porcelain", "--untracked-files=no"); err != nil {
		return meta, err
	} else if status != "" {
		meta.commit += "-dirty"
	}
	if meta.created, err = gitmeta.Created(ctx, module); err != nil {
		return meta, err
	}
	meta.version = os.Getenv("VERSION")
	if meta.version == "" {
		// No tag at HEAD is not an error: the version is then a pseudo-version.
		meta.version, _ = gitmeta.Git(ctx, module, "describe", "--tags", "--exact-match", "--match", "v*", "HEAD")
	}
	if meta.version == "" {
		meta.version = "v0.0.0-" + meta.created.Format("20060102150405") + "-" + head[:12]
	}
	if !semver.MatchString(meta.version) {
		return meta, fmt.Errorf("version %q is not a semantic version vX.Y.Z, as krew requires", meta.version)
	}
	return meta, nil
}

// archiveName is the archive of p.
func archiveName(p platform) string {
	return binary + "_" + p.OS + "_" + p.Arch + ".tar.gz"
}

// dist builds every platform's archive, checksums.txt and canopy.yaml into
// opts.out.
func dist(ctx context.Context, opts options) error {
	if err := os.RemoveAll(opts.out); err != nil {
		return err
	}
	if err := os.MkdirAll(opts.out, 0o755); err != nil { //nolint:gosec // release assets, readable by all
		return err
	}
	sums := map[platform]string{}
	var checksums strings.Builder
	for _, p := range opts.platforms {
		bin, err := compile(ctx, opts, p)
		if err != nil {
			return err
		}
		archive, err := tarGz(bin, opts.meta.created)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(opts.out, archiveName(p)), archive, 0o644); err != nil {
			return err
		}
		sum := sha256.Sum256(archive)
		sums[p] = hex.EncodeToString(sum[:])
		fmt.Fprintf(&checksums, "%s  %s\n", sums[p], archiveName(p))
	}
	if err := os.WriteFile(filepath.Join(opts.out, "checksums.txt"), []byte(checksums.String()), 0o644); err != nil {
		return err
	}
	manifest, err := yaml.Marshal(krewManifest(opts.meta.version, opts.uriBase, opts.platforms, sums))
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(opts.out, "canopy.yaml"), manifest, 0o644)
}

// compile builds kubectl-canopy for p, static, with the version and commit
// linked in, and returns the binary.
func compile(ctx context.Context, opts options, p platform) ([]byte, error) {
	dir, err := os.MkdirTemp("", "canopy-plugin-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }() // a leftover temporary directory is no failure
	path := filepath.Join(dir, binary)
	ldflags := "-s -w -X main.version=" + opts.meta.version + " -X main.commit=" + opts.meta.commit
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags="+ldflags, "-o", path, "./cmd/kubectl-canopy") //nolint:gosec // go build of the module's own plugin
	cmd.Dir = opts.module
	cmd.Env = crossbuild.Env(p.OS, p.Arch)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build for %s: %w\n%s", p, err, out)
	}
	return os.ReadFile(path) //nolint:gosec // the binary go build just wrote
}

// tarGz is a gzipped tar holding bin as kubectl-canopy, stamped mtime, so
// that the same commit gives the same archive and checksum.
func tarGz(bin []byte, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf) // no name, no modification time in the header
	tw := tar.NewWriter(zw)
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: binary, Mode: 0o755, Size: int64(len(bin)), ModTime: mtime, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, err
	}
	if _, err := tw.Write(bin); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// plugin is krew's Plugin manifest (krew.googlecontainertools.github.com/
// v1alpha2), the fields Canopy's uses.
type plugin struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   pluginMetadata `json:"metadata"`
	Spec       pluginSpec     `json:"spec"`
}

type pluginMetadata struct {
	Name string `json:"name"`
}

type pluginSpec struct {
	Version          string           `json:"version"`
	Homepage         string           `json:"homepage"`
	ShortDescription string           `json:"shortDescription"`
	Description      string           `json:"description"`
	Platforms        []pluginPlatform `json:"platforms"`
}

type pluginPlatform struct {
	Selector selector     `json:"selector"`
	URI      string       `json:"uri"`
	Sha256   string       `json:"sha256"`
	Bin      string       `json:"bin"`
	Files    []fileAction `json:"files"`
}

type selector struct {
	MatchLabels map[string]string `json:"matchLabels"`
}

type fileAction struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// krewManifest is the krew manifest of version, whose archives are at
// uriBase with the sha256 sums sums.
func krewManifest(version, uriBase string, built []platform, sums map[platform]string) plugin {
	m := plugin{
		APIVersion: "krew.googlecontainertools.github.com/v1alpha2",
		Kind:       "Plugin",
		Metadata:   pluginMetadata{Name: "canopy"},
		Spec: pluginSpec{
			Version:          version,
			Homepage:         repository,
			ShortDescription: "Policy compliance across a fleet of OCM clusters",
			Description: "kubectl canopy reads Canopy's (and Open Cluster Management's) policies:\n" +
				"compliance on each managed cluster, why a policy is Pending, its dependency\n" +
				"graph, offline validation, dry-run plans and a cluster's namespace tree.\n" +
				"It never writes to a cluster.\n",
		},
	}
	for _, p := range built {
		m.Spec.Platforms = append(m.Spec.Platforms, pluginPlatform{
			Selector: selector{MatchLabels: map[string]string{"os": p.OS, "arch": p.Arch}},
			URI:      strings.TrimSuffix(uriBase, "/") + "/" + archiveName(p),
			Sha256:   sums[p],
			Bin:      binary,
			Files:    []fileAction{{From: binary, To: "."}},
		})
	}
	return m
}
