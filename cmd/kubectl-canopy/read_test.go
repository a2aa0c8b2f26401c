package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/scheme"
	"github.com/canopy-policy/canopy/internal/test/testenv"
	"github.com/canopy-policy/canopy/pkg/compliance"
	"github.com/canopy-policy/canopy/test/inproc"
)

var update = flag.Bool("update", false, "Rewrite the golden files under testdata/, and docs/cli.md, with the output of this run.")

// readClusters are the managed clusters of the read commands' hub; they
// exist as names only, the test playing their agents.
var readClusters = []string{"cluster1", "cluster2"}

// t0 is when the simulated agents record their first compliance event, so
// that history timestamps are the same on every run.
var t0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// evaluations are what the template evaluators report on each cluster
// (oldest first) for templates whose dependencies are met.
var evaluations = map[string]map[string][]compliance.Compliance{
	"cluster1": {
		"operator-subscription": {
			{State: policyv1.NonCompliant, Message: "namespaces [operators] not found"},
			{State: policyv1.Compliant, Message: "namespaces [operators] found as specified"},
		},
		"quota": {{State: policyv1.Compliant, Message: "resourcequotas [q] found as specified in namespace prod"}},
	},
	"cluster2": {
		"operator-subscription": {{State: policyv1.NonCompliant, Message: "namespaces [operators] not found"}},
		"quota":                 {{State: policyv1.Compliant, Message: "resourcequotas [q] found as specified in namespace prod"}},
	},
}

// TestReadCommands runs status, explain and deps against a hub whose root
// statuses the real propagator and rootstatus controllers compute from
// replica statuses written as the agents' statussync writes them.
func TestReadCommands(t *testing.T) {
	env := startReadHub(t)
	t.Run("golden", func(t *testing.T) { testGoldenOutputs(t, env) })
	t.Run("errors", func(t *testing.T) { testErrors(t, env) })
	t.Run("context namespace", func(t *testing.T) { testContextNamespace(t, env) })
	t.Run("not the hub's policies", func(t *testing.T) { testNotRootPolicies(t, env) })
	t.Run("exclusions", func(t *testing.T) { testExclusions(t, env) }) // Note: last, it adds namespace edge
}

// testNotRootPolicies checks that status, pointed at policies that are all
// replicas (a cluster namespace, as on a managed cluster), says so and
// where to point it instead; with nothing at all it says only that.
func testNotRootPolicies(t *testing.T, env *testenv.Env) {
	g := NewWithT(t)
	out, err := runCLI(t, env, "status", "-n", "cluster1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(MatchRegexp(`^No root policies found, only \d+ polic(y|ies) that are replicas or local copies .*point --kubeconfig`))
	out, err = runCLI(t, env, "status", "-n", "no-such-namespace")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("No policies found.\n"))
}

// testContextNamespace checks the namespace scope when the kubeconfig
// context sets a namespace: it is the default, -A and namespace/name
// override it.
func testContextNamespace(t *testing.T, env *testenv.Env) {
	g := NewWithT(t)
	cfg, err := clientcmd.LoadFromFile(env.Hub.KubeconfigPath)
	g.Expect(err).NotTo(HaveOccurred())
	for _, c := range cfg.Contexts {
		c.Namespace = "ops"
	}
	path := filepath.Join(t.TempDir(), "ops.kubeconfig")
	g.Expect(clientcmd.WriteToFile(*cfg, path)).To(Succeed())
	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		root := newRootCommand(&out, &out)
		root.SetArgs(append([]string{"--kubeconfig", path}, args...))
		err := root.ExecuteContext(t.Context())
		return out.String(), err
	}
	out, err := run("status")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("ops/operator"))
	g.Expect(out).NotTo(ContainSubstring("policies/"))
	out, err = run("status", "-A")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("ops/operator"))
	g.Expect(out).To(ContainSubstring("policies/app"))
	_, err = run("explain", "app")
	g.Expect(err).To(MatchError(ContainSubstring("policy not found: ops/app")))
	out, err = run("status", "policies/app")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("policies/app"))
}

func testGoldenOutputs(t *testing.T, env *testenv.Env) {
	tests := []struct {
		golden string
		args   []string
	}{
		{"status", []string{"status"}},
		{"status-namespace", []string{"status", "-n", "ops"}},
		{"status-one", []string{"status", "app"}},
		{"status-json", []string{"status", "policies/app", "-o", "json"}},
		{"status-yaml", []string{"status", "-A", "-o", "yaml"}},
		{"status-color", []string{"status", "-n", "policies", "--color", "always"}},
		{"explain", []string{"explain", "policies/app"}},
		{"explain-cluster", []string{"explain", "operator", "--cluster", "cluster1", "--history", "5"}},
		{"explain-cycle", []string{"explain", "policies/loop-a", "--history", "0"}},
		{"explain-json", []string{"explain", "policies/app", "--cluster", "cluster2", "-o", "json"}},
		{"deps", []string{"deps", "policies/app"}},
		{"deps-cycle", []string{"deps", "-n", "policies", "loop-a"}},
		{"deps-dot", []string{"deps", "policies/app", "-o", "dot"}},
		{"deps-json", []string{"deps", "ops/operator", "-o", "json"}},
		{"explain-set", []string{"explain", "policies/baseline"}},
		{"deps-set", []string{"deps", "-n", "policies", "baseline"}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			out, err := runCLI(t, env, tt.args...)
			NewWithT(t).Expect(err).NotTo(HaveOccurred(), out)
			expectGolden(t, tt.golden, out)
		})
	}
}

// testErrors checks that mistakes fail with a message that says what is
// wrong, and print nothing else.
func testErrors(t *testing.T, env *testenv.Env) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"explain", "policies/nope"}, "policy not found: policies/nope"},
		{[]string{"deps", "nope"}, `policy not found: no root policy named "nope" in any namespace`},
		{[]string{"status", "-n", "ops", "app"}, "policy not found: ops/app"},
		{[]string{"status", "-o", "xml"}, `unknown output format "xml": use one of json, yaml, or no -o for text`},
		{[]string{"deps", "policies/app", "-o", "wide"}, `unknown output format "wide": use one of dot, json, yaml`},
		{[]string{"explain", "policies/app", "--cluster", "cluster9"}, `policy policies/app is not placed on cluster "cluster9"`},
		{[]string{"status", "--color", "sometimes"}, `invalid --color "sometimes"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			g := NewWithT(t)
			out, err := runCLI(t, env, tt.args...)
			g.Expect(err).To(MatchError(ContainSubstring(tt.want)))
			g.Expect(out).To(BeEmpty())
		})
	}
}

// runCLI runs the command line args in process against the hub of env.
func runCLI(t *testing.T, env *testenv.Env, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	root := newRootCommand(&out, &out)
	root.SetArgs(append([]string{"--kubeconfig", env.Hub.KubeconfigPath}, args...))
	err := root.ExecuteContext(t.Context())
	return out.String(), err
}

// expectGolden compares out with testdata/<name>.golden, or writes it there
// with -update.
func expectGolden(t *testing.T, name, out string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(out), 0o600); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the golden file (run with -update to write it): %v", err)
	}
	NewWithT(t).Expect(out).To(Equal(string(want)), "output differs from %s; run with -update to accept it", path)
}

// startReadHub starts a hub with the fixture of testdata/hub.yaml placed
// on both clusters, the hub controllers and the replica statuses the agents
// would write, and waits for the root statuses.
func startReadHub(t *testing.T) *testenv.Env {
	t.Helper()
	ctrl.SetLogger(logr.Discard())
	env := testenv.ForTest(t, testenv.Options{ManagedClusters: []string{}})
	agents := map[string]client.Client{}
	for _, c := range readClusters {
		cfg, err := env.RegisterCluster(t.Context(), c)
		if err != nil {
			t.Fatal(err)
		}
		if agents[c], err = client.New(cfg, client.Options{Scheme: scheme.New()}); err != nil {
			t.Fatal(err)
		}
	}
	inproc.StartHub(t, env.Hub.Config)
	applyFixture(t, env)
	for _, c := range readClusters {
		reportCompliance(t, agents[c], c)
	}
	waitForRootStatus(t, env.Hub.Client)
	return env
}
