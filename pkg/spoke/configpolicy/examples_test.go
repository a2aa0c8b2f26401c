package configpolicy

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
)

// TestExamples applies the ConfigurationPolicies of examples/configpolicy
// to a cluster where the payments team's objects partly comply, and checks
// what they report (run with -v to read their status).
func TestExamples(t *testing.T) {
	f := newFixture(t)
	root, err := controlplane.RepoRoot()
	f.g.Expect(err).NotTo(HaveOccurred())
	dir := filepath.Join(root, "examples", "configpolicy")
	f.namespaces(map[string]map[string]string{"sandbox": {"team": "payments"}}) // excluded by name, below
	sandbox := f.ns + "-sandbox"
	files, err := filepath.Glob(filepath.Join(dir, "0*.yaml"))
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(files).To(HaveLen(5))
	var names []string
	for _, file := range files {
		doc := readExample(f, file)
		// The examples name the namespace "payments"; the test's is unique.
		doc = strings.ReplaceAll(doc, "payments-sandbox", sandbox)
		doc = strings.ReplaceAll(doc, "name: payments\n", "name: "+f.ns+"-payments\n")
		doc = strings.ReplaceAll(doc, "namespace: payments\n", "namespace: "+f.ns+"-payments\n")
		doc = strings.ReplaceAll(doc, `"payments*"`, `"`+f.ns+`-*"`)
		names = append(names, f.policy(doc).Name)
	}
	payments := f.ns + "-payments"
	t.Cleanup(func() {
		_ = f.c.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: payments}})
	})
	f.g.Eventually(f.message("payments-namespace"), eventually, poll).Should(HavePrefix("Compliant"))
	f.object(&corev1.ConfigMap{}, `{metadata: {name: app-config, namespace: `+payments+`}, data: {log-level: debug, region: eu-west-1}}`)
	f.object(&corev1.ConfigMap{}, `{metadata: {name: old-settings, namespace: `+payments+`, labels: {legacy: "true"}}}`)
	f.object(&rbacv1.Role{}, `
metadata: {name: deployer, namespace: `+payments+`}
rules:
- {apiGroups: [""], resources: [configmaps], verbs: [get, list]}
- {apiGroups: [apps], resources: [deployments], verbs: ["*"]}`)

	want := map[string]string{
		"payments-namespace":        "Compliant: namespaces [" + payments + "] found as specified",
		"payments-app-config":       "NonCompliant: configmaps [app-config] found but not as specified in namespace " + payments,
		"payments-limits":           "Compliant: limitranges [container-limits] found as specified in namespace " + payments,
		"payments-deployer-role":    "NonCompliant: roles [deployer] found but not as specified in namespace " + payments,
		"payments-no-legacy-config": "Compliant: No objects of kind ConfigMap were matched from the policy objectSelector",
	}
	for name, msg := range want {
		f.g.Eventually(f.message(name), eventually, poll).Should(Equal(msg), name)
	}
	f.g.Eventually(f.configMap(payments, "old-settings"), eventually, poll).Should(BeNil())
	for _, name := range names {
		st, err := yaml.Marshal(f.status(name)(f.g))
		f.g.Expect(err).NotTo(HaveOccurred())
		t.Logf("status of %s:\n%s", name, st)
	}
	t.Logf("compliance events:\n%s", strings.Join(f.events()(f.g), "\n"))

	hub := &policyv1.Policy{}
	f.g.Expect(yaml.UnmarshalStrict([]byte(readExample(f, filepath.Join(dir, "policy.yaml"))), hub)).To(Succeed())
	hub.Namespace = f.ns
	f.g.Expect(f.c.Create(t.Context(), hub, client.DryRunAll)).To(Succeed())
}

func readExample(f *fixture, file string) string {
	data, err := os.ReadFile(file)
	f.g.Expect(err).NotTo(HaveOccurred())
	return string(data)
}
