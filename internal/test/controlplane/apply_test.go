package controlplane_test

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/canopy-policy/canopy/internal/test/controlplane"
)

// TestReadAndApply reads a directory of YAML (skipping kustomization.yaml)
// and applies it to a real API server, twice, and reports a bad object by
// name.
func TestReadAndApply(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	write := func(name, content string) {
		g.Expect(os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600)).To(Succeed())
	}
	// The ConfigMap comes first on purpose: Apply creates the namespace first.
	write("a.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm, namespace: apply-test}\ndata: {k: v}\n---\n")
	write("b.yaml", "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: apply-test}\n")
	write("kustomization.yaml", "resources: [a.yaml, b.yaml]\n")

	objs, err := controlplane.ReadObjects(dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs).To(HaveLen(2), "empty documents and kustomization.yaml are skipped")

	cp, err := controlplane.Start(t.Context(), "apply")
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = cp.Stop() })
	for range 2 { // applying again changes nothing and fails nothing
		g.Expect(controlplane.Apply(t.Context(), cp.Client, objs...)).To(Succeed())
	}
	cm := &corev1.ConfigMap{}
	g.Expect(cp.Client.Get(t.Context(), client.ObjectKey{Namespace: "apply-test", Name: "cm"}, cm)).To(Succeed())
	g.Expect(cm.Data).To(Equal(map[string]string{"k": "v"}))

	write("c.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bad, namespace: missing-namespace}\n")
	objs, err = controlplane.ReadObjects(filepath.Join(dir, "c.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(controlplane.Apply(t.Context(), cp.Client, objs...)).To(MatchError(ContainSubstring("applying ConfigMap missing-namespace/bad")))
}
