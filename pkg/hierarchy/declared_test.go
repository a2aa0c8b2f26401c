package hierarchy

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestDeclaredTree(t *testing.T) {
	g := NewWithT(t)
	nodes := DeclaredTree(policy(t, fooCorp))
	byName := map[string]TreeNode{}
	for _, n := range nodes {
		byName[n.Name] = n
	}
	g.Expect(nodes).To(HaveLen(6))
	g.Expect(byName["online"].Abstract).To(BeTrue())
	g.Expect(byName["shipping-prod"].Objects).To(Equal([]TreeObject{
		{APIVersion: "v1", Kind: "ResourceQuota", Name: "quota", From: "foo-corp"},
		{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding", Name: "pod-creators", From: "shipping-app-backend"},
	}))
	// Two levels declare the quota: the nearest one is named.
	g.Expect(byName["shipping-dev"].Objects[0]).To(Equal(TreeObject{APIVersion: "v1", Kind: "ResourceQuota", Name: "quota", From: "shipping-dev"}))
}

func TestTreeProblems(t *testing.T) {
	tests := []struct {
		name, doc string
		want      []string
	}{
		{name: "valid", doc: fooCorp},
		{name: "cycle and missing parent", doc: `
metadata: {name: p, namespace: c1}
spec:
  nodes: [{name: a, parent: b}, {name: b, parent: a}, {name: c, parent: gone}]`,
			want: []string{"node a: cycle a → b → a", "node b: cycle b → a → b", "node c: parent gone is not a node"}},
		{name: "cluster resources", doc: `
metadata: {name: p, namespace: c1}
spec:
  clusterResources: [{apiVersion: v1, kind: Namespace}]`,
			want: []string{"clusterResources[0]: apiVersion, kind and metadata.name are required"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(TreeProblems(policy(t, tc.doc))).To(Equal(tc.want))
		})
	}
}
