package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/pkg/vet"
)

// canopy runs a command line in process and returns what it printed.
func canopy(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	root := newRootCommand(&out, &out)
	root.SetArgs(args)
	err := root.ExecuteContext(t.Context())
	return out.String(), err
}

func TestVetGoodFiles(t *testing.T) {
	out, err := canopy(t, "vet", "testdata/vet/good")
	g := NewWithT(t)
	g.Expect(err).NotTo(HaveOccurred(), out)
	expectGolden(t, "vet/good", out)
}

func TestVetBadFiles(t *testing.T) {
	g := NewWithT(t)
	out, err := canopy(t, "vet", "testdata/vet/bad")
	g.Expect(err).To(MatchError(errVetFailed))
	expectGolden(t, "vet/bad", out)

	out, err = canopy(t, "vet", "-o", "json", "testdata/vet/bad")
	g.Expect(err).To(MatchError(errVetFailed))
	var findings []vet.Finding
	g.Expect(json.Unmarshal([]byte(out), &findings)).To(Succeed())
	checks := map[string]bool{}
	for _, f := range findings {
		g.Expect(f.File).To(HavePrefix("testdata/vet/bad/"))
		g.Expect(f.Line).To(BeNumerically(">", 0))
		checks[f.Check] = true
	}
	g.Expect(checks).To(HaveLen(6), "every check finds something in the bad corpus")
}

func TestVetEachBadFileFails(t *testing.T) {
	files, err := filepath.Glob("testdata/vet/bad/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no bad files: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			out, err := canopy(t, "vet", f)
			NewWithT(t).Expect(err).To(MatchError(errVetFailed), out)
		})
	}
}

// TestVetExamples checks that every shipped example passes vet, one
// example directory at a time (as each is applied), and all together.
func TestVetExamples(t *testing.T) {
	dirs, err := filepath.Glob("../../examples/*")
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, dir := range dirs {
		if info, err := os.Stat(dir); err != nil || !info.IsDir() {
			continue
		}
		all = append(all, dir)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			out, err := canopy(t, "vet", dir)
			g := NewWithT(t)
			g.Expect(err).NotTo(HaveOccurred(), out)
			g.Expect(out).To(MatchRegexp(`^[1-9]\d* documents checked, no problems found\n$`))
		})
	}
	NewWithT(t).Expect(all).NotTo(BeEmpty())
	out, err := canopy(t, append([]string{"vet"}, all...)...)
	NewWithT(t).Expect(err).NotTo(HaveOccurred(), out)
}

// startManaged starts a managed cluster's API server with the objects of
// fixture applied.
func startManaged(t *testing.T, fixture string) *controlplane.ControlPlane {
	t.Helper()
	ctrl.SetLogger(logr.Discard())
	cp := controlplane.ForTest(t, "managed")
	objs, err := controlplane.ReadObjects(fixture)
	if err != nil {
		t.Fatal(err)
	}
	if err := controlplane.Apply(t.Context(), cp.Client, objs...); err != nil {
		t.Fatal(err)
	}
	return cp
}

// TestPlan plans a HierarchyPolicy and a Policy's ConfigurationPolicies
// against a real managed cluster, and checks that nothing was written.
func TestPlan(t *testing.T) {
	cp := startManaged(t, "testdata/plan/cluster.yaml")
	g := NewWithT(t)
	before := resourceVersions(t, cp)

	out, err := canopy(t, "--kubeconfig", cp.KubeconfigPath, "plan", "testdata/plan/policies.yaml")
	g.Expect(err).NotTo(HaveOccurred(), out)
	expectGolden(t, "plan/plan", out)

	out, err = canopy(t, "--kubeconfig", cp.KubeconfigPath, "plan", "-o", "json", "testdata/plan/policies.yaml")
	g.Expect(err).NotTo(HaveOccurred(), out)
	var plans []planOf
	g.Expect(json.Unmarshal([]byte(out), &plans)).To(Succeed())
	g.Expect(plans).To(HaveLen(3))
	ops := map[string]int{}
	for _, p := range plans {
		for _, a := range p.Actions {
			ops[a.Op]++
		}
	}
	g.Expect(ops).To(Equal(map[string]int{"create": 5, "update": 2, "delete": 3}))

	after := resourceVersions(t, cp)
	g.Expect(after).To(HaveKey("ConfigMap default/legacy-settings"), "the snapshot covers what plan would delete")
	g.Expect(after).To(Equal(before), "plan must not write")
	err = cp.Client.Get(t.Context(), client.ObjectKey{Name: "team-b"}, &corev1.Namespace{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the namespace plan would create does not exist: %v", err)

	// Once the agent keeps a copy of the hub Policy (in its cluster
	// namespace), the templates are planned there without -n or --cluster.
	copyOf := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "cluster1.platform",
		Labels: map[string]string{policyv1.RootPolicyLabel: "cluster1.platform"}},
		Spec: policyv1.PolicySpec{PolicyTemplates: []policyv1.PolicyTemplate{}}}
	g.Expect(cp.Client.Create(t.Context(), copyOf)).To(Succeed())
	out, err = canopy(t, "--kubeconfig", cp.KubeconfigPath, "plan", "testdata/plan/policies.yaml")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("Policy cluster1/platform > ConfigurationPolicy team-a/app-config:"))
	out, err = canopy(t, "--kubeconfig", cp.KubeconfigPath, "plan", "-n", "default", "testdata/plan/policies.yaml")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("Policy cluster1/platform > ConfigurationPolicy default/app-config:"), "-n wins")
}

// resourceVersions maps every object of every listable kind (but leases
// and events, which the API server and its clients write on their own) to
// its resourceVersion: any write plan made would change it.
func resourceVersions(t *testing.T, cp *controlplane.ControlPlane) map[string]string {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	lists, err := dc.ServerPreferredResources()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") || r.Name == "leases" || r.Name == "events" {
				continue
			}
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(gv.WithKind(r.Kind + "List"))
			if err := cp.Client.List(t.Context(), list); err != nil {
				t.Fatalf("listing %s: %v", r.Name, err)
			}
			for _, item := range list.Items {
				out[r.Kind+" "+item.GetNamespace()+"/"+item.GetName()] = item.GetResourceVersion()
			}
		}
	}
	return out
}

// TestTree prints the declared and live trees of a real managed cluster.
func TestTree(t *testing.T) {
	cp := startManaged(t, "testdata/tree/cluster.yaml")
	g := NewWithT(t)
	out, err := canopy(t, "--kubeconfig", cp.KubeconfigPath, "tree")
	g.Expect(err).NotTo(HaveOccurred(), out)
	expectGolden(t, "tree/tree", out)

	out, err = canopy(t, "--kubeconfig", cp.KubeconfigPath, "tree", "-o", "json")
	g.Expect(err).NotTo(HaveOccurred(), out)
	var report treeReport
	g.Expect(json.Unmarshal([]byte(out), &report)).To(Succeed())
	g.Expect(report.Declared).To(HaveLen(1))
	g.Expect(report.Live).To(HaveLen(1))
	g.Expect(report.Live[0].Name).To(Equal("apps"))
}

func TestVetOutputAndArguments(t *testing.T) {
	g := NewWithT(t)
	out, err := canopy(t, "vet", "-o", "json", "testdata/vet/good")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("[]\n"))

	_, err = canopy(t, "vet", "-o", "wide", "testdata/vet/good")
	g.Expect(err).To(MatchError(ContainSubstring(`unknown output format "wide"`)))

	_, err = canopy(t, "vet", "testdata/vet/no-such-file.yaml")
	g.Expect(err).To(MatchError(ContainSubstring("no-such-file.yaml")))

	_, err = canopy(t, "vet")
	g.Expect(err).To(HaveOccurred(), "vet needs a file")
}

func TestPlanRefusesUnreadableFiles(t *testing.T) {
	out, err := canopy(t, "plan", "testdata/vet/bad/parse.yaml")
	NewWithT(t).Expect(err).To(MatchError(ContainSubstring("parse.yaml:5")), out)
}
