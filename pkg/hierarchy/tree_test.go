package hierarchy

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
	"github.com/canopy-policy/canopy/pkg/hierarchy/hierarchytest"
)

// policy decodes a HierarchyPolicy; fooCorp is the shared foo-corp tree.
var policy, fooCorp = hierarchytest.Policy, hierarchytest.FooCorp

func TestTreeInheritance(t *testing.T) {
	g := NewWithT(t)
	tr := Build(policy(t, fooCorp))
	g.Expect(tr.Problems).To(BeEmpty())
	g.Expect(tr.Namespaces()).To(Equal([]string{"shipping-dev", "shipping-prod", "shipping-staging"}))
	g.Expect(tr.Subtree("online")).To(Equal([]string{"shipping-dev", "shipping-prod", "shipping-staging"}))
	g.Expect(tr.Subtree("shipping-dev")).To(Equal([]string{"shipping-dev"}))

	prod, err := tr.ObjectsOf("shipping-prod")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(keys(prod)).To(Equal([]string{"ResourceQuota shipping-prod/quota", "RoleBinding shipping-prod/pod-creators"}))
	g.Expect(prod[1].GetLabels()).To(Equal(map[string]string{
		hierarchyv1alpha1.ManagedByLabel: "canopy", hierarchyv1alpha1.PolicyLabel: "foo-corp"}))
	g.Expect(prod[1].GetAnnotations()).To(HaveKeyWithValue(hierarchyv1alpha1.SourceAnnotation,
		"HierarchyPolicy c1/foo-corp, node shipping-app-backend"))

	ns := tr.NamespaceObject("shipping-prod")
	g.Expect(ns.GetLabels()).To(Equal(map[string]string{"org": "foo-corp", "app": "shipping", "env": "prod",
		hierarchyv1alpha1.ManagedByLabel: "canopy", hierarchyv1alpha1.PolicyLabel: "foo-corp"}))
}

// TestTreeMergeMinimum: the lowest hard limit per resource wins.
func TestTreeMergeMinimum(t *testing.T) {
	g := NewWithT(t)
	dev, err := Build(policy(t, fooCorp)).ObjectsOf("shipping-dev")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(dev[0].Object["spec"]).To(Equal(map[string]any{"hard": map[string]any{"pods": "10", "memory": "10Gi", "cpu": "4"}}))
}

func TestTreeInvalid(t *testing.T) {
	tests := []struct {
		name, nodes string
		want        []string
	}{
		{"cycle", `[{name: a, parent: b}, {name: b, parent: a}]`,
			[]string{"node a: cycle a → b → a", "node b: cycle b → a → b"}},
		{"missing parent", `[{name: a, parent: gone}]`, []string{"node a: parent gone is not a node"}},
		{"duplicate without merge rule", `[{name: a, resources: [{apiVersion: v1, kind: ConfigMap, metadata: {name: c}}]},
			{name: b, parent: a, resources: [{apiVersion: v1, kind: ConfigMap, metadata: {name: c}}]}]`,
			[]string{"node b: ConfigMap b/c is also declared by node b and a, and ConfigMap has no merge rule"}},
		{"reserved namespace", `[{name: kube-system}]`, []string{"node kube-system: namespace kube-system is reserved"}},
		{"not an object", `[{name: a, resources: [{kind: ConfigMap}]}]`,
			[]string{"node a: resources[0]: apiVersion, kind and metadata.name are required"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			tr := Build(policy(t, "metadata: {name: p}\nspec: {nodes: "+tt.nodes+"}"))
			g.Expect(tr.Problems).To(Equal(tt.want))
			g.Expect(tr.Valid()).To(BeFalse())
		})
	}
}

func keys(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, KeyOf(o).String())
	}
	return out
}
