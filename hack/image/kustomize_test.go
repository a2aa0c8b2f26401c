package main

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

// TestSetImage checks that set-image points the images: entry at a tag or
// a digest, keeps the file's other entries and comments, and adds the
// entry where there is none.
func TestSetImage(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	const kustomization = `# The base.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- deployment.yaml
# Canopy's image.
images:
- name: example.com/other
  newTag: v1
- name: ghcr.io/canopy-policy/canopy
  newTag: latest
`
	for _, tt := range []struct {
		name, before, ref, want string
	}{
		{"digest", kustomization, "registry.example.com:5000/canopy@" + digest, `# The base.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- deployment.yaml
# Canopy's image.
images:
- name: example.com/other
  newTag: v1
- name: ghcr.io/canopy-policy/canopy
  newName: registry.example.com:5000/canopy
  digest: ` + digest + `
`},
		{"tag", kustomization, "quay.io/example/canopy:v0.2.0", `# The base.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- deployment.yaml
# Canopy's image.
images:
- name: example.com/other
  newTag: v1
- name: ghcr.io/canopy-policy/canopy
  newTag: v0.2.0
  newName: quay.io/example/canopy
`},
		{"tag and digest", kustomization, "quay.io/example/canopy:v0.2.0@" + digest, `# The base.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- deployment.yaml
# Canopy's image.
images:
- name: example.com/other
  newTag: v1
- name: ghcr.io/canopy-policy/canopy
  newName: quay.io/example/canopy
  digest: ` + digest + `
`},
		{"no entry", "resources:\n- deployment.yaml\n", "quay.io/example/canopy:v1", `resources:
- deployment.yaml
images:
- name: ghcr.io/canopy-policy/canopy
  newName: quay.io/example/canopy
  newTag: v1
`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			path := filepath.Join(t.TempDir(), "kustomization.yaml")
			g.Expect(os.WriteFile(path, []byte(tt.before), 0o644)).To(Succeed())
			g.Expect(setImage(path, tt.ref)).To(Succeed())
			got, err := os.ReadFile(path)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(string(got)).To(Equal(tt.want))
		})
	}
	g := NewWithT(t)
	g.Expect(setImage(filepath.Join(t.TempDir(), "kustomization.yaml"), "not a reference!")).To(MatchError(ContainSubstring("parsing image reference")))
}
