package hub_test

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// images are the images the hub's Deployment runs and installs: its
// containers' images and the agent image its --agent-image resolves to.
type images struct {
	hub, agent []string
}

// imagesOf finds the Deployment name in objs and its images.
func imagesOf(t *testing.T, objs []*unstructured.Unstructured, name string) images {
	t.Helper()
	g := NewWithT(t)
	var out images
	for _, o := range objs {
		if o.GetKind() != "Deployment" || o.GetName() != name {
			continue
		}
		d := &appsv1.Deployment{}
		g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, d)).To(Succeed())
		for _, c := range d.Spec.Template.Spec.Containers {
			out.hub = append(out.hub, c.Image)
			for _, e := range c.Env {
				if e.Name == "CANOPY_AGENT_IMAGE" {
					g.Expect(c.Args).To(ContainElement("--agent-image=$(CANOPY_AGENT_IMAGE)"))
					out.agent = append(out.agent, e.Value)
				}
			}
		}
	}
	return out
}

// TestOneImageEntry checks that the hub, the agents the addon installs and
// the agent of deploy/spoke take Canopy's image from the kustomization's
// one images: entry, in the bases and in an overlay that pins a digest.
func TestOneImageEntry(t *testing.T) {
	g := NewWithT(t)
	const latest = "ghcr.io/canopy-policy/canopy:latest"
	g.Expect(imagesOf(t, build(t, "."), "canopy-hub")).To(Equal(images{hub: []string{latest}, agent: []string{latest}}))
	g.Expect(imagesOf(t, build(t, "../spoke"), "canopy-agent").hub).To(Equal([]string{latest}))

	const pinned = "registry.example.com/canopy@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	overlay := func(base string) string {
		abs, err := filepath.Abs(base)
		g.Expect(err).NotTo(HaveOccurred())
		dir := t.TempDir()
		rel, err := filepath.Rel(dir, abs)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(`resources:
- `+rel+`
images:
- name: ghcr.io/canopy-policy/canopy
  newName: registry.example.com/canopy
  digest: sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
`), 0o644)).To(Succeed())
		return dir
	}
	g.Expect(imagesOf(t, build(t, overlay(".")), "canopy-hub")).To(Equal(images{hub: []string{pinned}, agent: []string{pinned}}))
	g.Expect(imagesOf(t, build(t, overlay("../hub-with-dashboard")), "canopy-hub")).To(Equal(images{hub: []string{pinned}, agent: []string{pinned}}))
	g.Expect(imagesOf(t, build(t, overlay("../spoke")), "canopy-agent").hub).To(Equal([]string{pinned}))
}
