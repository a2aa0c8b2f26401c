package main

import (
	"fmt"
	"os"

	"github.com/google/go-containerregistry/pkg/name"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// imageName is the name deploy/'s manifests give Canopy's image, which
// the kustomizations' images: entry replaces.
const imageName = "ghcr.io/canopy-policy/canopy"

// setImage points the images: entry for imageName in the kustomization
// file at ref (registry/repository:tag or registry/repository@sha256:...),
// as `kustomize edit set image` does, keeping the file's comments.
func setImage(path, ref string) error {
	newName, tag, digest, err := splitReference(ref)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(path) //nolint:gosec // the kustomization the caller names
	if err != nil {
		return err
	}
	node, err := yaml.Parse(string(data))
	if err != nil {
		return fmt.Errorf("parsing %s: %w", path, err)
	}
	images, err := node.Pipe(yaml.LookupCreate(yaml.SequenceNode, "images"))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	entry, err := images.Pipe(yaml.MatchElement("name", imageName))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if entry == nil {
		entry = yaml.NewMapRNode(&map[string]string{"name": imageName})
		if err := images.PipeE(yaml.Append(entry.YNode())); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	fields := []struct{ key, value string }{{"newName", newName}, {"newTag", tag}, {"digest", digest}}
	for _, f := range fields {
		if f.value == "" {
			if err := entry.PipeE(yaml.Clear(f.key)); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			continue
		}
		if err := entry.PipeE(yaml.SetField(f.key, yaml.NewStringRNode(f.value))); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	out, err := node.String()
	if err != nil {
		return err
	}
	return os.WriteFile(path, []byte(out), 0o644) //nolint:gosec // the kustomization the caller names
}

// splitReference splits ref into the repository and either its tag or its
// digest, as the kustomization's newName, newTag and digest fields take
// them; a reference with both keeps the digest.
func splitReference(ref string) (repository, tag, digest string, err error) {
	if d, err := name.NewDigest(ref); err == nil {
		return d.Context().Name(), "", d.DigestStr(), nil
	}
	t, err := name.NewTag(ref)
	if err != nil {
		return "", "", "", fmt.Errorf("parsing image reference %q: %w", ref, err)
	}
	return t.Context().Name(), t.TagStr(), "", nil
}
