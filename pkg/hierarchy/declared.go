package hierarchy

import (
	"slices"
	"strings"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
)

// TreeProblems returns what makes the declared tree of p invalid, sorted,
// as the TreeValid condition would list them: cycles, missing parents,
// reserved namespaces, nodes declared twice, objects declared at two levels
// without a merge rule, undecodable resources and clusterResources.
func TreeProblems(p *hierarchyv1alpha1.HierarchyPolicy) []string {
	t := Build(p)
	_, problems := t.ClusterObjects(p.Spec.ClusterResources)
	out := append(slices.Clone(t.Problems), problems...)
	slices.Sort(out)
	return slices.Compact(out)
}

// TreeNode is one node of a declared tree, with the objects its namespace
// gets.
type TreeNode struct {
	// Name is the node's name, the namespace's name for a concrete node.
	Name string
	// Parent is the parent node, "" for a root.
	Parent string
	// Abstract nodes are not namespaces.
	Abstract bool
	// Broken is true when the node's ancestry or objects cannot be
	// computed (see TreeProblems); Objects is then empty.
	Broken bool
	// Objects are the objects declared for the node's namespace (for an
	// abstract node, those it would get), sorted.
	Objects []TreeObject
}

// TreeObject is one object a namespace gets from the tree.
type TreeObject struct {
	// APIVersion and Kind are the object's type.
	APIVersion, Kind string
	// Name is the object's name.
	Name string
	// From is the node that declares it: the namespace's own node, or an
	// ancestor.
	From string
}

// DeclaredTree returns the nodes of p's tree, sorted by name, each with
// the objects its namespace gets and the node they come from, as the
// syncer computes them.
func DeclaredTree(p *hierarchyv1alpha1.HierarchyPolicy) []TreeNode {
	t := Build(p)
	out := make([]TreeNode, 0, len(t.Nodes))
	for _, n := range p.Spec.Nodes {
		if slices.ContainsFunc(out, func(tn TreeNode) bool { return tn.Name == n.Name }) {
			continue
		}
		tn := TreeNode{Name: n.Name, Parent: n.Parent, Abstract: n.Abstract, Broken: t.Broken[n.Name]}
		if !tn.Broken {
			objs, _ := t.ObjectsOf(n.Name)
			prefix := t.Source + ", node "
			for _, u := range objs {
				from, _ := strings.CutPrefix(u.GetAnnotations()[hierarchyv1alpha1.SourceAnnotation], prefix)
				tn.Objects = append(tn.Objects, TreeObject{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Name: u.GetName(), From: from})
			}
		}
		out = append(out, tn)
	}
	slices.SortFunc(out, func(a, b TreeNode) int { return strings.Compare(a.Name, b.Name) })
	return out
}
