package faults

import (
	"fmt"
	"maps"
	"slices"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// treePrefix starts the name of every namespace of the declared tree.
const treePrefix = "ft"

// tree is a declared HierarchyPolicy tree and what it declares: an abstract
// root whose ConfigMap every namespace inherits, and width children per
// node down to depth, each a namespace with a ConfigMap of its own.
type tree struct {
	nodes []hierarchyv1alpha1.Node
	// declared maps each namespace to its declared ConfigMaps' data.
	declared map[string]map[string]map[string]string
	// clusterRole is the one declared cluster-scoped object.
	clusterRole string
}

func newTree(depth, width int) *tree {
	t := &tree{declared: map[string]map[string]map[string]string{}, clusterRole: "faults-tree-reader"}
	root := hierarchyv1alpha1.Node{Name: treePrefix + "-org", Abstract: true,
		Resources: slicesOf(raw(configMap("", "org-wide", map[string]any{"from": "org"})))}
	t.nodes = append(t.nodes, root)
	t.grow(root.Name, treePrefix, map[string]map[string]string{"org-wide": {"from": "org"}}, depth, width)
	return t
}

// grow adds the children of parent, which inherit inherited, down to depth.
func (t *tree) grow(parent, prefix string, inherited map[string]map[string]string, depth, width int) {
	if depth == 0 {
		return
	}
	for i := range width {
		name := fmt.Sprintf("%s-%d", prefix, i)
		own := "cm-" + name
		data := map[string]string{"from": name}
		t.nodes = append(t.nodes, hierarchyv1alpha1.Node{Name: name, Parent: parent,
			Resources: slicesOf(raw(configMap("", own, map[string]any{"from": name})))})
		declared := maps.Clone(inherited)
		declared[own] = data
		t.declared[name] = declared
		t.grow(name, name, declared, depth-1, width)
	}
}

// namespaces returns the tree's namespaces, sorted.
func (t *tree) namespaces() []string { return slices.Sorted(maps.Keys(t.declared)) }

// template returns the HierarchyPolicy as a policy template, enforcing the
// tree with ConfigMaps as the managed kind.
func (t *tree) template(name string) policyv1.PolicyTemplate {
	return policyv1.PolicyTemplate{ObjectDefinition: raw(map[string]any{
		"apiVersion": hierarchyv1alpha1.GroupVersion.String(), "kind": "HierarchyPolicy",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"remediationAction": "enforce",
			"managedKinds":      []any{map[string]any{"kind": "ConfigMap"}},
			"clusterResources": []any{map[string]any{
				"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
				"metadata": map[string]any{"name": t.clusterRole},
				"rules":    []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"namespaces"}, "verbs": []any{"get"}}},
			}},
			"nodes": t.nodes,
		},
	})}
}

func slicesOf[T any](v ...T) []T { return v }
