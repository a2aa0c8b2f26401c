package ops_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// update rewrites the generated files the tests check (deploy/argocd/argocd-cm.yaml).
var update = flag.Bool("update", false, "rewrite deploy/argocd/argocd-cm.yaml from the scripts")

const (
	// argoCDDir holds the health scripts, one <Kind>.lua per kind, and
	// argocd-cm.yaml.
	argoCDDir = "../../deploy/argocd"
	// argoCDHealthKey is the argocd-cm key of a kind's health script
	// before its "<group>_<Kind>".
	argoCDHealthKey = "resource.customizations.health."
)

// healthKinds are the kinds deploy/argocd has a health script for.
var healthKinds = []schema.GroupVersionKind{policyGVK, policySetGVK, configurationPolicyGVK, operatorPolicyGVK}

// argoCDConfigMapHeader introduces argocd-cm.yaml.
const argoCDConfigMapHeader = `# Argo CD health checks for Canopy's (OCM's) policy kinds, generated from the
# <Kind>.lua files beside this one by
#   go test ./test/ops -run TestArgoCDConfigMapIsTheScripts -update
# Merge it into Argo CD's argocd-cm, for example with
#   kubectl -n argocd patch configmap argocd-cm --patch-file deploy/argocd/argocd-cm.yaml
`

// TestArgoCDConfigMapIsTheScripts checks that deploy/argocd/argocd-cm.yaml
// is a ConfigMap argocd-cm whose data is exactly the health script of each
// kind under its resource.customizations.health.<group>_<Kind> key, and
// rewrites it with -update.
func TestArgoCDConfigMapIsTheScripts(t *testing.T) {
	g := NewWithT(t)
	want := corev1.ConfigMap{Data: map[string]string{}}
	want.APIVersion, want.Kind = "v1", "ConfigMap"
	want.Name, want.Namespace = "argocd-cm", "argocd"
	want.Labels = map[string]string{"app.kubernetes.io/name": "argocd-cm", "app.kubernetes.io/part-of": "argocd"}
	for _, gvk := range healthKinds {
		script, err := healthScript(gvk.Kind)
		g.Expect(err).NotTo(HaveOccurred())
		want.Data[argoCDHealthKey+gvk.Group+"_"+gvk.Kind] = script
	}
	path := filepath.Join(argoCDDir, "argocd-cm.yaml")
	if *update {
		data, err := yaml.Marshal(want)
		g.Expect(err).NotTo(HaveOccurred())
		data = []byte(strings.Replace(string(data), "  creationTimestamp: null\n", "", 1))
		g.Expect(os.WriteFile(path, append([]byte(argoCDConfigMapHeader), data...), 0o644)).To(Succeed())
	}
	data, err := os.ReadFile(path)
	g.Expect(err).NotTo(HaveOccurred())
	var got corev1.ConfigMap
	g.Expect(yaml.UnmarshalStrict(data, &got)).To(Succeed())
	g.Expect(got.Kind).To(Equal("ConfigMap"))
	g.Expect(got.Name).To(Equal("argocd-cm"))
	g.Expect(got.Data).To(Equal(want.Data), "argocd-cm.yaml is stale: run go test ./test/ops -run TestArgoCDConfigMapIsTheScripts -update")
}

// healthCase is an object of the fleet and the health its kind's script
// must give it.
type healthCase struct {
	// where is "hub" or "managed", the API server the object is read from.
	where     string
	gvk       schema.GroupVersionKind
	namespace string
	name      string
	status    string
	// message is a part of the message the script must return.
	message string
}

// TestArgoCDHealthOfTheFleet runs each kind's health script against the
// objects the hub and the agent wrote for testdata/fleet.yaml, read from
// their API servers: root policies, replicas and policy sets on the hub,
// ConfigurationPolicies and OperatorPolicies on the managed cluster.
// Compliant is Healthy, NonCompliant Degraded with the first reason,
// Pending Progressing with the dependency, an unplaced policy or set
// Healthy with a message that says so. Every object of those kinds in the
// fleet gets a status Argo CD accepts.
func TestArgoCDHealthOfTheFleet(t *testing.T) {
	settledFleet(t)
	replica := func(name string) string { return fleetNamespace + "." + name }
	cases := []healthCase{
		{"hub", policyGVK, fleetNamespace, "compliant", "Healthy", "Compliant on 1 of 1 clusters"},
		{"hub", policyGVK, fleetNamespace, "noncompliant", "Degraded", "NonCompliant on 1 of 1 clusters: cluster1 (the reasons are in the replica cluster1/ops.noncompliant)"},
		{"hub", policyGVK, fleetNamespace, "pending", "Progressing", "Pending on cluster1: waiting for Policy noncompliant to be Compliant"},
		{"hub", policyGVK, fleetNamespace, "unplaced", "Healthy", "Placed on no cluster: No PlacementBinding in namespace ops names this policy"},
		{"hub", policyGVK, fleetNamespace, "operator", "Healthy", "Compliant on 1 of 1 clusters"},
		{"hub", policyGVK, fleetNamespace, "operator-missing", "Degraded", "NonCompliant on 1 of 1 clusters: cluster1"},
		{"hub", policyGVK, fleetNamespace, "hub-template-error", "Degraded", `HubTemplateError: `},
		{"hub", policyGVK, fleetNamespace, "rollout-stopped", "Degraded", "DecisionGroupNotFound"},
		{"hub", policyGVK, fleetNamespace, "unreachable", "Degraded", "PropagationFailed: "},
		{"hub", policyGVK, clusterName, replica("compliant"), "Healthy", "Compliant"},
		{"hub", policyGVK, clusterName, replica("noncompliant"), "Degraded", "Template ops-noncompliant: NonCompliant; violation - namespaces [ops-absent] not found"},
		{"hub", policyGVK, clusterName, replica("pending"), "Progressing",
			"Template ops-pending: Pending; Dependencies were not satisfied: 1 is still pending (Policy ops.noncompliant)"},
		{"hub", policyGVK, clusterName, replica("operator-missing"), "Degraded", "the operator namespace ('ops-op-missing') does not exist"},
		{"hub", policySetGVK, fleetNamespace, "compliant-set", "Healthy", "Compliant: compliant"},
		{"hub", policySetGVK, fleetNamespace, "noncompliant-set", "Degraded", "NonCompliant: a member policy is NonCompliant (members: compliant, noncompliant)"},
		{"hub", policySetGVK, fleetNamespace, "pending-set", "Progressing", "Pending: Policies awaiting pending dependencies: pending"},
		{"hub", policySetGVK, fleetNamespace, "unplaced-set", "Healthy", "Placed on no cluster: no PlacementBinding in namespace ops names this set"},
		{"managed", configurationPolicyGVK, clusterName, "ops-compliant", "Healthy", "namespaces [default] found as specified"},
		{"managed", configurationPolicyGVK, clusterName, "ops-noncompliant", "Degraded", "namespaces [ops-absent] not found"},
		{"managed", operatorPolicyGVK, clusterName, "ops-operator", "Healthy", "Compliant; the policy spec is valid"},
		{"managed", operatorPolicyGVK, clusterName, "ops-operator-missing", "Degraded", "the operator namespace ('ops-op-missing') does not exist"},
	}
	g := NewWithT(t)
	for _, c := range cases {
		cl := env.Hub.Client
		if c.where == "managed" {
			cl = env.Cluster(clusterName).Client
		}
		obj := get(t.Context(), g, cl, c.gvk, c.namespace, c.name)
		got := assess(g, obj)
		t.Logf("%s %s/%s: %s: %s", c.gvk.Kind, c.namespace, c.name, got.Status, got.Message)
		g.Expect(got.Status).To(Equal(c.status), "%s %s/%s: %s", c.gvk.Kind, c.namespace, c.name, got.Message)
		g.Expect(got.Message).To(ContainSubstring(c.message), "%s %s/%s", c.gvk.Kind, c.namespace, c.name)
	}
	for _, gvk := range healthKinds {
		for _, ns := range []string{fleetNamespace, clusterName} {
			for _, obj := range list(t.Context(), g, env.Hub.Client, gvk, ns) {
				assess(g, &obj)
			}
			for _, obj := range list(t.Context(), g, env.Cluster(clusterName).Client, gvk, ns) {
				assess(g, &obj)
			}
		}
	}
}

// TestArgoCDHealthBeforeStatus runs each kind's health script against the
// objects of testdata/fleet.yaml as they are applied, and against the
// policy templates they carry, before any controller wrote a status: every
// one is Progressing. A ConfigurationPolicy and an OperatorPolicy of the
// fleet whose generation is newer than the one evaluated are Progressing
// too.
func TestArgoCDHealthBeforeStatus(t *testing.T) {
	g := NewWithT(t)
	objs, err := readManifests("testdata/fleet.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	assessed := map[string]bool{}
	for _, obj := range objs {
		obj.SetNamespace(fleetNamespace)
		obj.SetGeneration(1)
		if !hasHealthScript(obj.GroupVersionKind()) {
			continue
		}
		got := assess(g, obj)
		g.Expect(got.Status).To(Equal("Progressing"), "%s %s: %s", obj.GetKind(), obj.GetName(), got.Message)
		assessed[obj.GetKind()] = true
		templates, _, _ := unstructured.NestedSlice(obj.Object, "spec", "policy-templates")
		for _, tmpl := range templates {
			def, _, _ := unstructured.NestedMap(tmpl.(map[string]any), "objectDefinition")
			template := &unstructured.Unstructured{Object: def}
			template.SetGeneration(1)
			got := assess(g, template)
			g.Expect(got.Status).To(Equal("Progressing"), "%s %s: %s", template.GetKind(), template.GetName(), got.Message)
			assessed[template.GetKind()] = true
		}
	}
	g.Expect(assessed).To(HaveLen(len(healthKinds)), "the fleet has an object of each kind")
}

// TestArgoCDHealthOfAStaleEvaluation checks that a ConfigurationPolicy and
// an OperatorPolicy of the fleet, Compliant at the generation the agent
// evaluated, are Progressing once their spec is newer than that.
func TestArgoCDHealthOfAStaleEvaluation(t *testing.T) {
	settledFleet(t)
	g := NewWithT(t)
	managed := env.Cluster(clusterName).Client
	for gvk, name := range map[schema.GroupVersionKind]string{configurationPolicyGVK: "ops-compliant", operatorPolicyGVK: "ops-operator"} {
		obj := get(t.Context(), g, managed, gvk, clusterName, name)
		g.Expect(assess(g, obj).Status).To(Equal("Healthy"))
		obj.SetGeneration(obj.GetGeneration() + 1)
		got := assess(g, obj)
		g.Expect(got.Status).To(Equal("Progressing"), "%s %s", gvk.Kind, name)
		g.Expect(got.Message).To(ContainSubstring("to be evaluated"))
	}
}

// hasHealthScript says whether deploy/argocd has a script for gvk's kind.
func hasHealthScript(gvk schema.GroupVersionKind) bool {
	for _, k := range healthKinds {
		if k.Group == gvk.Group && k.Kind == gvk.Kind {
			return true
		}
	}
	return false
}

// assess runs the health script of obj's kind against obj, failing g when
// the script fails or returns a status Argo CD does not know.
func assess(g Gomega, obj *unstructured.Unstructured) healthStatus {
	script, err := healthScript(obj.GetKind())
	g.Expect(err).NotTo(HaveOccurred())
	got, err := runHealthScript(script, obj.Object)
	g.Expect(err).NotTo(HaveOccurred(), "%s %s/%s", obj.GetKind(), obj.GetNamespace(), obj.GetName())
	return got
}
