// Tests of the kustomize bases deploy/hub and deploy/spoke: they build with
// kustomize's own library (what `kubectl apply -k` runs) and the API server
// accepts what they render.
package hub_test

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/canopy-policy/canopy/internal/test/controlplane"
)

// build renders the kustomization in dir as `kustomize build dir` does.
func build(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	g := NewWithT(t)
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	g.Expect(err).NotTo(HaveOccurred())
	var objs []*unstructured.Unstructured
	for _, res := range resMap.Resources() {
		data, err := res.MarshalJSON()
		g.Expect(err).NotTo(HaveOccurred())
		obj := &unstructured.Unstructured{}
		g.Expect(obj.UnmarshalJSON(data)).To(Succeed())
		objs = append(objs, obj)
	}
	return objs
}

func names(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName())
	}
	return out
}

func TestHubBase(t *testing.T) {
	g := NewWithT(t)
	objs := build(t, ".")
	g.Expect(names(objs)).To(ConsistOf(
		"Namespace//canopy-system",
		"CustomResourceDefinition//policies.policy.open-cluster-management.io",
		"CustomResourceDefinition//placementbindings.policy.open-cluster-management.io",
		"CustomResourceDefinition//policysets.policy.open-cluster-management.io",
		"CustomResourceDefinition//configurationpolicies.policy.open-cluster-management.io",
		"CustomResourceDefinition//operatorpolicies.policy.open-cluster-management.io",
		"CustomResourceDefinition//certificatepolicies.policy.open-cluster-management.io",
		"CustomResourceDefinition//hierarchypolicies.hierarchy.canopy.io",
		"CustomResourceDefinition//subnamespaces.hierarchy.canopy.io",
		"ValidatingAdmissionPolicy//policy-name-length.policy.open-cluster-management.io",
		"ValidatingAdmissionPolicyBinding//policy-name-length.policy.open-cluster-management.io",
		"ValidatingAdmissionPolicy//policyset-exclusions.policy.open-cluster-management.io",
		"ValidatingAdmissionPolicyBinding//policyset-exclusions.policy.open-cluster-management.io",
		"ValidatingAdmissionPolicy//root-in-cluster-namespace.policy.open-cluster-management.io",
		"ValidatingAdmissionPolicyBinding//root-in-cluster-namespace.policy.open-cluster-management.io",
		"ClusterRole//canopy-hub",
		"ClusterRoleBinding//canopy-hub",
		"ServiceAccount/canopy-system/canopy-hub",
		"Deployment/canopy-system/canopy-hub",
		"Service/canopy-system/canopy-hub-metrics",
		"PersistentVolumeClaim/canopy-system/canopy-hub-history",
		"ClusterManagementAddOn//canopy-policy",
	))
	for _, o := range objs {
		g.Expect(o.GetLabels()).To(HaveKeyWithValue("app.kubernetes.io/part-of", "canopy"), o.GetName())
	}
}

func TestAgentBase(t *testing.T) {
	g := NewWithT(t)
	objs := build(t, "../spoke")
	got := names(objs)
	g.Expect(got).To(ContainElements(
		"Namespace//canopy-system",
		"CustomResourceDefinition//policies.policy.open-cluster-management.io",
		"CustomResourceDefinition//configurationpolicies.policy.open-cluster-management.io",
		"CustomResourceDefinition//operatorpolicies.policy.open-cluster-management.io",
		"CustomResourceDefinition//certificatepolicies.policy.open-cluster-management.io",
		"CustomResourceDefinition//hierarchypolicies.hierarchy.canopy.io",
		"CustomResourceDefinition//subnamespaces.hierarchy.canopy.io",
		"ClusterRole//canopy-agent",
		"ClusterRoleBinding//canopy-agent",
		"ClusterRole//canopy-agent-enforcement",
		"ClusterRoleBinding//canopy-agent-enforcement",
		"ServiceAccount/canopy-system/canopy-agent",
		"Deployment/canopy-system/canopy-agent",
		"Service/canopy-system/canopy-agent-metrics",
	))
	g.Expect(got).NotTo(ContainElement(ContainSubstring("placementbindings")))
	g.Expect(got).NotTo(ContainElement(ContainSubstring("ValidatingAdmissionPolicy")))
	// The Deployment reads the cluster name from the generated ConfigMap,
	// whose name kustomize suffixes with a hash.
	var configMap string
	var refs []string
	for _, o := range objs {
		switch o.GetKind() {
		case "ConfigMap":
			configMap = o.GetName()
		case "Deployment":
			containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			env, _, _ := unstructured.NestedSlice(containers[0].(map[string]any), "env")
			for _, e := range env {
				name, _, _ := unstructured.NestedString(e.(map[string]any), "valueFrom", "configMapKeyRef", "name")
				refs = append(refs, name)
			}
		}
	}
	g.Expect(configMap).To(HavePrefix("canopy-agent-config-"))
	g.Expect(refs).To(ContainElement(configMap))
}

// TestDashboardComponent checks that the dashboard component, on top of
// deploy/hub, makes canopy-hub serve the dashboard and puts a Service in
// front of it, and that the base alone does neither.
func TestDashboardComponent(t *testing.T) {
	g := NewWithT(t)
	dashboardArgs := func(objs []*unstructured.Unstructured) (args []string, service bool) {
		for _, o := range objs {
			switch {
			case o.GetKind() == "Deployment" && o.GetName() == "canopy-hub":
				containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
				a, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
				args = a
			case o.GetKind() == "Service" && o.GetName() == "canopy-hub-dashboard":
				service = true
			}
		}
		return args, service
	}
	args, service := dashboardArgs(build(t, "../hub-with-dashboard"))
	g.Expect(args).To(ContainElement("--dashboard-address=:8090"))
	g.Expect(service).To(BeTrue())
	args, service = dashboardArgs(build(t, "."))
	g.Expect(args).NotTo(ContainElement(ContainSubstring("--dashboard-address")))
	g.Expect(service).To(BeFalse())
}

// TestBasesApply applies both rendered bases, and the hub with its dashboard
// component, to a real API server with a server-side dry run: every object must be valid for the API server and
// the CRDs it has (OCM's included, as on an OCM hub).
func TestBasesApply(t *testing.T) {
	g := NewWithT(t)
	hub := controlplane.ForTest(t, "hub")
	ctx := t.Context()
	// Note: a dry run creates nothing, so the namespace the others live in
	// must exist for real.
	g.Expect(hub.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "canopy-system"}})).To(Succeed())
	for _, dir := range []string{".", "../spoke", "../hub-with-dashboard"} {
		for _, obj := range build(t, dir) {
			err := hub.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj),
				client.DryRunAll, client.ForceOwnership, client.FieldOwner("kustomize-test"))
			g.Expect(err).NotTo(HaveOccurred(), "%s: %s %s", dir, obj.GetKind(), obj.GetName())
		}
	}
}
