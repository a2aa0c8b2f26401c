package syncer

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
)

func policy(t testing.TB, doc string) *hierarchyv1alpha1.HierarchyPolicy {
	t.Helper()
	p := &hierarchyv1alpha1.HierarchyPolicy{}
	if err := yaml.UnmarshalStrict([]byte(doc), p); err != nil {
		t.Fatal(err)
	}
	return p
}

// fooCorp is the foo-corp tree (examples/hierarchy/01-foo-corp-tree.yaml
// has the full version).
const fooCorp = `
metadata: {name: foo-corp, namespace: c1}
spec:
  managedKinds: [{group: rbac.authorization.k8s.io, kind: RoleBinding}, {kind: ResourceQuota, merge: Minimum}]
  nodes:
  - name: foo-corp
    abstract: true
    labels: {org: foo-corp}
    resources:
    - {apiVersion: v1, kind: ResourceQuota, metadata: {name: quota}, spec: {hard: {pods: "100", memory: 10Gi}}}
  - name: online
    parent: foo-corp
    abstract: true
  - name: shipping-app-backend
    parent: online
    abstract: true
    labels: {app: shipping}
    resources:
    - {apiVersion: rbac.authorization.k8s.io/v1, kind: RoleBinding, metadata: {name: pod-creators}, roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: pod-creator}, subjects: [{kind: Group, name: shipping-admins, apiGroup: rbac.authorization.k8s.io}]}
  - {name: shipping-prod, parent: shipping-app-backend, labels: {env: prod}}
  - {name: shipping-staging, parent: shipping-app-backend}
  - name: shipping-dev
    parent: shipping-app-backend
    resources:
    - {apiVersion: v1, kind: ResourceQuota, metadata: {name: quota}, spec: {hard: {pods: "10", cpu: "4"}}}
`

func TestAffectedNamespaces(t *testing.T) {
	g := NewWithT(t)
	old := policy(t, fooCorp)
	changed := old.DeepCopy()
	changed.Spec.Nodes[2].Labels = map[string]string{"app": "shipping2"} // shipping-app-backend
	g.Expect(affectedNamespaces(old, changed)).To(Equal([]string{"shipping-dev", "shipping-prod", "shipping-staging"}))
	changed = old.DeepCopy()
	changed.Spec.Nodes[5].Labels = map[string]string{"team": "a"} // shipping-dev
	g.Expect(affectedNamespaces(old, changed)).To(Equal([]string{"shipping-dev"}))
	changed = old.DeepCopy()
	changed.Spec.Nodes = changed.Spec.Nodes[:5] // shipping-dev removed
	g.Expect(affectedNamespaces(old, changed)).To(Equal([]string{"shipping-dev"}))
}

func keys(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, keyOf(o).String())
	}
	return out
}
