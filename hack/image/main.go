// Command image builds Canopy's container image without a container engine:
// canopy-hub and canopy-agent, compiled static for linux/amd64 and
// linux/arm64, appended as one layer onto a base layer it makes itself
// (/etc/passwd and /etc/group with the non-root user, the CA certificates of
// this machine), as an OCI image index. Nothing is pulled from a registry,
// and the same commit gives the same digest.
//
//	go run ./hack/image build -out bin/image               # OCI layout (make image)
//	go run ./hack/image push -layout bin/image -image REF  # to any registry (make image-push)
//	go run ./hack/image set-image -image REF deploy/hub deploy/spoke
//	go run ./hack/image rootfs -out DIR -arch ARCH         # the Containerfile's tree
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/v1/layout"
)

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

// run runs the subcommand args[0] with the flags that follow it.
func run(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: image build|push|set-image|rootfs [flags]")
	}
	fs := flag.NewFlagSet("image "+args[0], flag.ContinueOnError)
	common := commonFlags{
		module: fs.String("module", ".", "Root of Canopy's module (where go.mod is)."),
		ca:     fs.String("ca-certificates", defaultCABundle, "The CA certificate bundle the image carries at "+caPath+"."),
	}
	switch args[0] {
	case "build":
		return runBuild(ctx, fs, common, args[1:], out)
	case "push":
		return runPush(ctx, fs, args[1:], out)
	case "set-image":
		return runSetImage(fs, args[1:])
	case "rootfs":
		return runRootFS(ctx, fs, common, args[1:])
	default:
		return fmt.Errorf("unknown subcommand %q: want build, push, set-image or rootfs", args[0])
	}
}

// commonFlags are the flags every subcommand takes.
type commonFlags struct {
	module, ca *string
}

// runBuild builds the image and writes it as an OCI layout.
func runBuild(ctx context.Context, fs *flag.FlagSet, common commonFlags, args []string, out io.Writer) error {
	outDir := fs.String("out", "bin/image", "Directory of the OCI layout to write (replaced).")
	if err := fs.Parse(args); err != nil {
		return err
	}
	meta, err := metadataOf(ctx, *common.module)
	if err != nil {
		return err
	}
	idx, err := build(ctx, buildOptions{module: *common.module, caBundle: *common.ca, meta: meta})
	if err != nil {
		return err
	}
	if err := writeLayout(*outDir, idx); err != nil {
		return err
	}
	digest, err := idx.Digest()
	if err != nil {
		return fmt.Errorf("computing the index digest: %w", err)
	}
	size, err := indexSizes(idx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Wrote %s: %s (commit %s, version %s; %s)\n", *outDir, digest, meta.commit, meta.version, size)
	return nil
}

// runPush pushes the OCI layout build wrote to a registry.
func runPush(ctx context.Context, fs *flag.FlagSet, args []string, out io.Writer) error {
	layoutDir := fs.String("layout", "bin/image", "OCI layout written by build.")
	ref := fs.String("image", "", "Where to push: registry/repository:tag (required).")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *ref == "" {
		return errors.New("push: -image is required (IMAGE=registry/repo:tag make image-push)")
	}
	idx, err := layout.ImageIndexFromPath(*layoutDir)
	if err != nil {
		return fmt.Errorf("reading %s (run make image first): %w", *layoutDir, err)
	}
	pinned, err := push(ctx, idx, *ref)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Pushed %s\n", pinned)
	return nil
}

// runSetImage sets the images: entry of the kustomizations named.
func runSetImage(fs *flag.FlagSet, args []string) error {
	ref := fs.String("image", "", "The image reference the kustomizations' images: entry takes (required).")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *ref == "" {
		return errors.New("set-image: -image is required")
	}
	for _, dir := range fs.Args() {
		if err := setImage(filepath.Join(dir, "kustomization.yaml"), *ref); err != nil {
			return err
		}
	}
	return nil
}

// runRootFS writes the image's file tree for one architecture (the
// Containerfile's builder stage).
func runRootFS(ctx context.Context, fs *flag.FlagSet, common commonFlags, args []string) error {
	outDir := fs.String("out", "", "Directory to write the image's file tree into (required).")
	arch := fs.String("arch", "", "Architecture of the binaries: amd64 or arm64 (required).")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *outDir == "" || *arch == "" {
		return errors.New("rootfs: -out and -arch are required")
	}
	return writeRootFS(ctx, *common.module, *common.ca, *outDir, *arch)
}
