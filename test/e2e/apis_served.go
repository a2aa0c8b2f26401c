package e2e

import (
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2" //nolint:revive // ginkgo's DSL reads best unqualified
	. "github.com/onsi/gomega"    //nolint:revive // gomega's DSL reads best unqualified
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// ServedKind is a kind a cluster must serve, and a minimal valid object of it.
type ServedKind struct {
	schema.GroupVersionKind
	// Resource is the kind's plural resource name.
	Resource string
	// Namespaced is whether objects of the kind live in a namespace.
	Namespaced bool
	// Object is the object's content as YAML, without apiVersion, kind and
	// metadata.
	Object string
}

func kind(gv, k, resource string, namespaced bool, object string) ServedKind {
	return ServedKind{
		GroupVersionKind: schema.FromAPIVersionAndKind(gv, k),
		Resource:         resource,
		Namespaced:       namespaced,
		Object:           object,
	}
}

// CanopyKinds are Canopy's API: every cluster serves them.
var CanopyKinds = []ServedKind{
	kind("policy.open-cluster-management.io/v1", "Policy", "policies", true,
		`spec: {disabled: false, remediationAction: inform, policy-templates: []}`),
	kind("policy.open-cluster-management.io/v1", "PlacementBinding", "placementbindings", true, `
placementRef: {apiGroup: cluster.open-cluster-management.io, kind: Placement, name: e2e}
subjects: [{apiGroup: policy.open-cluster-management.io, kind: Policy, name: e2e}]`),
	kind("policy.open-cluster-management.io/v1beta1", "PolicySet", "policysets", true,
		`spec: {description: e2e, policies: [e2e]}`),
	kind("policy.open-cluster-management.io/v1", "ConfigurationPolicy", "configurationpolicies", true, `
spec:
  remediationAction: inform
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: e2e, namespace: default}}`),
	kind("policy.open-cluster-management.io/v1", "CertificatePolicy", "certificatepolicies", true, `
spec:
  remediationAction: inform
  namespaceSelector: {include: [default]}
  minimumDuration: 100h`),
	kind("policy.open-cluster-management.io/v1beta1", "OperatorPolicy", "operatorpolicies", true, `
spec:
  remediationAction: inform
  complianceType: musthave
  upgradeApproval: None
  subscription: {name: example-operator, namespace: operators, channel: stable, source: example-catalog, sourceNamespace: olm}`),
	kind("hierarchy.canopy.io/v1alpha1", "HierarchyPolicy", "hierarchypolicies", true,
		`spec: {remediationAction: inform, nodes: [{name: team-a}, {name: dev, parent: team-a}]}`),
	kind("hierarchy.canopy.io/v1alpha1", "SubNamespace", "subnamespaces", true, `spec: {}`),
}

// OCMKinds are the Open Cluster Management APIs Canopy consumes: every
// cluster serves them (a managed cluster needs few, but one set of CRDs
// everywhere keeps the environments alike).
var OCMKinds = []ServedKind{
	kind("cluster.open-cluster-management.io/v1", "ManagedCluster", "managedclusters", false,
		`spec: {hubAcceptsClient: false}`),
	kind("cluster.open-cluster-management.io/v1beta2", "ManagedClusterSet", "managedclustersets", false, `spec: {}`),
	kind("cluster.open-cluster-management.io/v1beta2", "ManagedClusterSetBinding", "managedclustersetbindings", true,
		`spec: {clusterSet: default}`),
	kind("cluster.open-cluster-management.io/v1beta1", "Placement", "placements", true,
		`spec: {clusterSets: [default]}`),
	kind("cluster.open-cluster-management.io/v1beta1", "PlacementDecision", "placementdecisions", true, ``),
	kind("addon.open-cluster-management.io/v1alpha1", "ClusterManagementAddOn", "clustermanagementaddons", false,
		`spec: {addOnMeta: {displayName: e2e}}`),
	kind("addon.open-cluster-management.io/v1beta1", "ClusterManagementAddOn", "clustermanagementaddons", false, `spec: {}`),
	kind("addon.open-cluster-management.io/v1alpha1", "ManagedClusterAddOn", "managedclusteraddons", true, `spec: {}`),
	kind("addon.open-cluster-management.io/v1beta1", "ManagedClusterAddOn", "managedclusteraddons", true, `spec: {}`),
	kind("addon.open-cluster-management.io/v1alpha1", "AddOnDeploymentConfig", "addondeploymentconfigs", true, `spec: {}`),
	kind("work.open-cluster-management.io/v1", "ManifestWork", "manifestworks", true, `
spec:
  workload:
    manifests:
    - {apiVersion: v1, kind: ConfigMap, metadata: {name: e2e, namespace: default}}`),
	kind("work.open-cluster-management.io/v1", "AppliedManifestWork", "appliedmanifestworks", false,
		`spec: {hubHash: e2e, manifestWorkName: e2e}`),
}

// APIsServedSpecInput is the input of APIsServedSpec.
type APIsServedSpecInput struct {
	// ClusterName names the cluster in messages.
	ClusterName string
	// Config and Client are an administrator's connection to the cluster.
	Config *rest.Config
	Client client.Client
	// Kinds are the kinds the cluster must serve.
	Kinds []ServedKind
}

// APIsServedSpec checks that a cluster serves Kinds: each is in discovery with
// the right scope, and the API server accepts, returns and deletes an object
// of each.
func APIsServedSpec(inputGetter func() APIsServedSpecInput) {
	var input APIsServedSpecInput

	BeforeEach(func() {
		input = inputGetter()
		Expect(input.Config).NotTo(BeNil(), "APIsServedSpec needs a Config")
		Expect(input.Client).NotTo(BeNil(), "APIsServedSpec needs a Client")
		Expect(input.Kinds).NotTo(BeEmpty(), "APIsServedSpec needs Kinds")
	})

	It("lists every kind in discovery", func(ctx SpecContext) {
		dc, err := discovery.NewDiscoveryClientForConfig(input.Config)
		Expect(err).NotTo(HaveOccurred())
		for _, k := range input.Kinds {
			list, err := dc.ServerResourcesForGroupVersion(k.GroupVersion().String())
			Expect(err).NotTo(HaveOccurred(), "%s does not serve %s", input.ClusterName, k.GroupVersion())
			Expect(list.APIResources).To(ContainElement(SatisfyAll(
				HaveField("Name", k.Resource),
				HaveField("Kind", k.Kind),
				HaveField("Namespaced", k.Namespaced),
			)), "%s: %s in %s", input.ClusterName, k.Kind, k.GroupVersion())
		}
	})

	It("accepts an object of every kind", func(ctx SpecContext) {
		ns := CreateNamespace(ctx, input.Client, "e2e-apis")
		for _, k := range input.Kinds {
			obj := k.object(ns)
			Expect(input.Client.Create(ctx, obj)).To(Succeed(), "%s: creating %s %s", input.ClusterName, k.GroupVersionKind, obj.GetName())
			DeferCleanup(func(ctx SpecContext) { // cluster-scoped objects outlive the namespace
				Expect(client.IgnoreNotFound(input.Client.Delete(ctx, obj))).To(Succeed())
			})
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(k.GroupVersionKind)
			Expect(input.Client.Get(ctx, client.ObjectKeyFromObject(obj), got)).To(Succeed())
			Expect(got.GetUID()).NotTo(BeEmpty())
			Expect(input.Client.Delete(ctx, got)).To(Succeed())
		}
	})
}

// object returns a new object of the kind, with a random name, in ns when
// the kind is namespaced.
func (k ServedKind) object(ns string) *unstructured.Unstructured {
	GinkgoHelper()
	content := map[string]any{}
	Expect(yaml.Unmarshal([]byte(k.Object), &content)).To(Succeed(), "%s: bad test object", k.Kind)
	if content == nil {
		content = map[string]any{}
	}
	obj := &unstructured.Unstructured{Object: content}
	obj.SetGroupVersionKind(k.GroupVersionKind)
	obj.SetName(fmt.Sprintf("e2e-%s-%s", strings.ToLower(k.Kind), rand.String(5)))
	if k.Namespaced {
		obj.SetNamespace(ns)
	}
	obj.SetLabels(map[string]string{"app.kubernetes.io/managed-by": "canopy-e2e"})
	return obj
}
