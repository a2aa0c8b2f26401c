package syncer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
)

// TestExamples applies examples/hierarchy to a real API server and checks
// what they do. Their HierarchyPolicies go in the test's namespace; the
// namespaces they name are the examples' own (no other test uses them).
func TestExamples(t *testing.T) {
	f := newFixture(t)
	root, err := controlplane.RepoRoot()
	f.g.Expect(err).NotTo(HaveOccurred())
	dir := filepath.Join(root, "examples", "hierarchy")

	if f.exists(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "canopy-system"}})(f.g) {
		t.Skip("the examples' fixed names are taken: this API server ran them already (go test -count > 1)")
	}
	f.object(&corev1.Namespace{}, `{metadata: {name: canopy-system}}`)
	f.object(&corev1.Secret{}, `{metadata: {name: registry-creds, namespace: canopy-system}, stringData: {token: t}}`)
	f.object(&corev1.Namespace{}, `{metadata: {name: restricted-app, labels: {network: restricted}}}`)
	for _, file := range []string{"01-foo-corp-tree.yaml", "02-generators.yaml", "03-live-propagation.yaml"} {
		f.apply(filepath.Join(dir, file))
	}
	for _, name := range []string{"foo-corp", "baseline", "live-propagation"} {
		f.g.Eventually(f.evaluated(name), eventually, poll).Should(Equal(policyv1.Compliant), name)
	}
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "shipping-dev", Name: "compute"}}
	f.g.Expect(f.exists(quota)(f.g)).To(BeTrue())
	f.g.Expect(quota.Spec.Hard).To(HaveLen(2))
	f.g.Expect(quota.Spec.Hard.Pods().String()).To(Equal("10"))
	f.g.Eventually(f.exists(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "restricted-app", Name: "registry-creds"}}),
		eventually, poll).Should(BeTrue())
	f.g.Eventually(f.data("team-a-web", "defaults"), eventually, poll).Should(Equal(map[string]string{"log-level": "info"}))
	f.t.Logf("status of foo-corp: %s", statusYAML(f, "foo-corp"))
}

// apply creates the objects of a YAML file; HierarchyPolicies go in the
// test's namespace, owned by the parent Policy.
func (f *fixture) apply(path string) {
	f.t.Helper()
	raw, err := os.ReadFile(path)
	f.g.Expect(err).NotTo(HaveOccurred())
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		u := &unstructured.Unstructured{}
		f.g.Expect(yaml.Unmarshal([]byte(doc), &u.Object)).To(Succeed())
		if u.GetKind() == hierarchyv1alpha1.HierarchyPolicyKind {
			f.policy(doc)
			continue
		}
		f.g.Expect(f.c.Create(f.t.Context(), u)).To(Succeed(), u.GetName())
	}
}

func statusYAML(f *fixture, name string) string {
	out, err := yaml.Marshal(f.status(name)(f.g))
	f.g.Expect(err).NotTo(HaveOccurred())
	return string(out)
}
