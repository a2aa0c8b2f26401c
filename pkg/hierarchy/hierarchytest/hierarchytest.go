// Package hierarchytest holds the HierarchyPolicy fixtures the tests of
// pkg/hierarchy and the syncer share. Test-only: no production package
// imports it.
package hierarchytest

import (
	"testing"

	"sigs.k8s.io/yaml"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
)

// Policy decodes doc, strictly, into a HierarchyPolicy; it fails t when doc
// does not decode.
func Policy(t testing.TB, doc string) *hierarchyv1alpha1.HierarchyPolicy {
	t.Helper()
	p := &hierarchyv1alpha1.HierarchyPolicy{}
	if err := yaml.UnmarshalStrict([]byte(doc), p); err != nil {
		t.Fatal(err)
	}
	return p
}

// FooCorp is the foo-corp tree (examples/hierarchy/01-foo-corp-tree.yaml
// has the full version).
const FooCorp = `
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
