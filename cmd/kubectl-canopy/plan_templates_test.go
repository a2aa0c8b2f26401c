package main

import (
	"encoding/base64"
	"testing"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/yaml"

	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/internal/test/testenv"
	"github.com/canopy-policy/canopy/pkg/dryrun"
)

// hubTemplatesExample is the example of hub templates: a Policy whose
// ConfigMap takes its values from the cluster's name and labels, the
// Policy's labels and a ConfigMap on the hub (fleet-values, in the file).
const hubTemplatesExample = "../../examples/templates/01-hub-templates.yaml"

// planSecret is the value of the Secret the managed templates read; plan
// must never show it.
const planSecret = "plan-s3cr3t-Value"

// TestPlanTemplates plans policies with templates on real API servers: a
// hub, and managed clusters whose ClusterClaim id.k8s.io holds their name.
// Neither the hub nor the managed cluster is written to.
func TestPlanTemplates(t *testing.T) {
	env := startTemplatesEnv(t)
	cluster1 := env.Cluster("cluster1").ControlPlane
	managedBefore, hubBefore := resourceVersions(t, cluster1), resourceVersions(t, env.Hub)
	t.Run("managed templates", func(t *testing.T) { testPlanManagedTemplates(t, env) })
	t.Run("hub templates", func(t *testing.T) { testPlanHubTemplates(t, env) })
	t.Run("hub template error", func(t *testing.T) { testPlanHubTemplateError(t, env) })
	t.Run("hub templates without a hub", func(t *testing.T) { testPlanWithoutHub(t, env) })
	g := NewWithT(t)
	g.Expect(resourceVersions(t, cluster1)).To(Equal(managedBefore), "plan must not write to the managed cluster")
	g.Expect(resourceVersions(t, env.Hub)).To(Equal(hubBefore), "plan must not write to the hub")
}

// startTemplatesEnv starts a hub with the example's fleet-values ConfigMap,
// and cluster1 and cluster2, cluster1 with testdata/plan-templates/cluster.yaml.
func startTemplatesEnv(t *testing.T) *testenv.Env {
	t.Helper()
	ctrl.SetLogger(logr.Discard())
	ctx := t.Context()
	env := testenv.ForTest(t, testenv.Options{ManagedClusters: []string{"cluster1", "cluster2"}})
	example, err := controlplane.ReadObjects(hubTemplatesExample)
	if err != nil {
		t.Fatal(err)
	}
	hubObjects := []*unstructured.Unstructured{namespaceObject("policies")}
	for _, obj := range example {
		if obj.GetKind() == "ConfigMap" {
			hubObjects = append(hubObjects, obj)
		}
	}
	if err := controlplane.Apply(ctx, env.Hub.Client, hubObjects...); err != nil {
		t.Fatal(err)
	}
	managed, err := controlplane.ReadObjects("testdata/plan-templates/cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := controlplane.Apply(ctx, env.Cluster("cluster1").Client, managed...); err != nil {
		t.Fatal(err)
	}
	return env
}

func namespaceObject(name string) *unstructured.Unstructured {
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(name)
	return ns
}

// expectNoSecret fails when out shows the Secret's value, as it is or
// base64-encoded.
func expectNoSecret(g Gomega, out string) {
	g.Expect(out).NotTo(ContainSubstring(planSecret))
	g.Expect(out).NotTo(ContainSubstring(base64.StdEncoding.EncodeToString([]byte(planSecret))))
}

// testPlanManagedTemplates plans a ConfigurationPolicy whose values come
// from the cluster's ClusterClaim and from a Secret: the resolved objects
// show, the Secret's value never does, in any output format.
func testPlanManagedTemplates(t *testing.T, env *testenv.Env) {
	g := NewWithT(t)
	kubeconfig := env.Cluster("cluster1").KubeconfigPath
	out, err := canopy(t, "--kubeconfig", kubeconfig, "plan", "testdata/plan-templates/managed.yaml")
	g.Expect(err).NotTo(HaveOccurred(), out)
	expectGolden(t, "plan-templates/managed", out)
	g.Expect(out).To(ContainSubstring("id: cluster1"))
	g.Expect(out).To(ContainSubstring("password: '" + dryrun.Redacted + "'"))
	expectNoSecret(g, out)

	for _, format := range []string{outputJSON, outputYAML} {
		out, err := canopy(t, "--kubeconfig", kubeconfig, "plan", "-o", format, "testdata/plan-templates/managed.yaml")
		g.Expect(err).NotTo(HaveOccurred(), out)
		expectNoSecret(g, out)
		var plans []planOf
		g.Expect(yaml.Unmarshal([]byte(out), &plans)).To(Succeed())
		g.Expect(plans).To(HaveLen(1))
		data := map[string]any{}
		for _, a := range plans[0].Actions {
			data[a.Op+" "+a.Kind+" "+a.Name] = a.Object["data"]
		}
		g.Expect(data).To(Equal(map[string]any{
			"create ConfigMap cluster-identity": map[string]any{"id": "cluster1"},
			"update ConfigMap cluster-info":     map[string]any{"id": "cluster1", "owner": "ops"},
			"create Secret app-creds":           map[string]any{"password": dryrun.Redacted},
			"create ConfigMap app-settings":     map[string]any{"user": "admin", "password": dryrun.Redacted},
		}), format)
	}
}

// testPlanHubTemplates plans the hub templates example for each cluster:
// the hub resolves them for the cluster named, and the templates are
// planned in its namespace.
func testPlanHubTemplates(t *testing.T, env *testenv.Env) {
	for _, c := range []struct{ cluster, region string }{{"cluster1", "eu-west-1"}, {"cluster2", "us-east-2"}} {
		t.Run(c.cluster, func(t *testing.T) {
			g := NewWithT(t)
			out, err := canopy(t, "--kubeconfig", env.Cluster(c.cluster).KubeconfigPath, "plan", hubTemplatesExample,
				"--hub-kubeconfig", env.Hub.KubeconfigPath, "--cluster", c.cluster)
			g.Expect(err).NotTo(HaveOccurred(), out)
			if c.cluster == "cluster1" {
				expectGolden(t, "plan-templates/hub", out)
			}
			g.Expect(out).To(ContainSubstring("Policy policies/cluster-settings > ConfigurationPolicy " + c.cluster + "/cluster-settings:\n"))
			for _, line := range []string{"cluster: " + c.cluster, "region: " + c.region, "clusterset: default", "owner: platform"} {
				g.Expect(out).To(ContainSubstring(line))
			}
			g.Expect(out).NotTo(ContainSubstring("{{hub"))
			g.Expect(out).To(HaveSuffix("Plan: 1 to create, 0 to update, 0 to delete.\n"))
		})
	}
}

// testPlanHubTemplateError plans a Policy whose first template's hub
// template fails: it is a PROBLEM with the error, and only the second
// template is planned.
func testPlanHubTemplateError(t *testing.T, env *testenv.Env) {
	g := NewWithT(t)
	out, err := canopy(t, "--kubeconfig", env.Cluster("cluster1").KubeconfigPath, "plan", "testdata/plan-templates/hub-error.yaml",
		"--hub-kubeconfig", env.Hub.KubeconfigPath, "--cluster", "cluster1")
	g.Expect(err).NotTo(HaveOccurred(), out)
	expectGolden(t, "plan-templates/hub-error", out)
	g.Expect(out).To(ContainSubstring("Policy policies/broken-settings > ConfigurationPolicy cluster1/region:\n" +
		"  PROBLEM   hub templates failed for cluster cluster1: "))
	g.Expect(out).To(ContainSubstring(`"missing-values" not found`))
	g.Expect(out).NotTo(ContainSubstring("ConfigMap default/region"))
	g.Expect(out).To(ContainSubstring("name: cluster1"))
	g.Expect(out).To(HaveSuffix("Plan: 1 to create, 0 to update, 0 to delete.\n"))
}

// testPlanWithoutHub plans the hub templates example without a hub: its
// template is a PROBLEM, never planned with the literal "{{hub" text, and
// is planned in -n, else --cluster, else the context's namespace.
func testPlanWithoutHub(t *testing.T, env *testenv.Env) {
	kubeconfig := env.Cluster("cluster1").KubeconfigPath
	for _, tt := range []struct {
		args      []string
		namespace string
	}{
		{nil, "default"},
		{[]string{"--cluster", "cluster1"}, "cluster1"},
		{[]string{"--cluster", "cluster1", "-n", "elsewhere"}, "elsewhere"},
	} {
		g := NewWithT(t)
		out, err := canopy(t, append([]string{"--kubeconfig", kubeconfig, "plan", hubTemplatesExample}, tt.args...)...)
		g.Expect(err).NotTo(HaveOccurred(), out)
		g.Expect(out).To(Equal("Policy policies/cluster-settings > ConfigurationPolicy " + tt.namespace + "/cluster-settings:\n" +
			"  PROBLEM   hub templates ({{hub ... hub}}) are resolved by the hub for each cluster: pass --hub-kubeconfig " +
			"(or --hub-context) and --cluster to plan this template\n" +
			"Plan: 0 to create, 0 to update, 0 to delete.\n"))
	}
	_, err := canopy(t, "--kubeconfig", kubeconfig, "plan", hubTemplatesExample, "--hub-kubeconfig", env.Hub.KubeconfigPath)
	NewWithT(t).Expect(err).To(MatchError(ContainSubstring("need --cluster")))
}
