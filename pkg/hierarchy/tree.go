package hierarchy

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
)

// reservedNamespaces are never touched, whatever a policy declares.
var reservedNamespaces = map[string]bool{"kube-system": true, "kube-public": true, "kube-node-lease": true}

// IsReserved reports whether ns is a namespace Canopy never touches,
// whatever a policy declares.
func IsReserved(ns string) bool { return reservedNamespaces[ns] }

// Tree is a HierarchyPolicy's declared tree, validated. It is pure data:
// building it reads nothing from the cluster.
type Tree struct {
	// Policy is the HierarchyPolicy's name, the value of PolicyLabel.
	Policy string
	// Source is the provenance annotation value of its objects.
	Source string
	// Nodes are the declared nodes, by name.
	Nodes map[string]hierarchyv1alpha1.Node
	merge map[schema.GroupKind]hierarchyv1alpha1.MergeRule
	// Managed are the policy's managedKinds.
	Managed []hierarchyv1alpha1.ManagedKind
	// Problems are the validation errors, sorted; any problem holds every
	// deletion.
	Problems []string
	// Broken are the nodes whose ancestry cannot be computed (cycle, missing
	// parent, duplicate object): their namespaces are left alone.
	Broken map[string]bool
}

// Build builds and validates the tree of p.
func Build(p *hierarchyv1alpha1.HierarchyPolicy) *Tree {
	t := &Tree{
		Policy:  p.Name,
		Source:  hierarchyv1alpha1.HierarchyPolicyKind + " " + p.Namespace + "/" + p.Name,
		Nodes:   map[string]hierarchyv1alpha1.Node{},
		merge:   map[schema.GroupKind]hierarchyv1alpha1.MergeRule{},
		Broken:  map[string]bool{},
		Managed: p.Spec.ManagedKinds,
	}
	for _, mk := range p.Spec.ManagedKinds {
		if mk.Merge != "" {
			t.merge[schema.GroupKind{Group: mk.Group, Kind: mk.Kind}] = mk.Merge
		}
	}
	for _, n := range p.Spec.Nodes {
		if _, dup := t.Nodes[n.Name]; dup {
			t.Problems = append(t.Problems, fmt.Sprintf("node %s is declared twice", n.Name))
		}
		t.Nodes[n.Name] = n
		if reservedNamespaces[n.Name] {
			t.Problems = append(t.Problems, fmt.Sprintf("node %s: namespace %s is reserved", n.Name, n.Name))
			t.Broken[n.Name] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(t.Nodes)) {
		if _, err := t.Ancestry(name); err != nil {
			t.Problems = append(t.Problems, err.Error())
			t.Broken[name] = true
			continue
		}
		if _, err := t.ObjectsOf(name); err != nil {
			t.Problems = append(t.Problems, err.Error())
			t.Broken[name] = true
		}
	}
	for _, g := range p.Spec.Generators { // else the generator fails on every evaluation, unreported
		if _, err := metav1.LabelSelectorAsSelector(&g.NamespaceSelector); err != nil {
			t.Problems = append(t.Problems, fmt.Sprintf("generator %s: namespaceSelector: %v", g.Name, err))
		}
	}
	slices.Sort(t.Problems)
	t.Problems = slices.Compact(t.Problems)
	return t
}

// Valid reports whether the tree has no problem.
func (t *Tree) Valid() bool { return len(t.Problems) == 0 }

// Ancestry returns name and its ancestors, nearest first.
func (t *Tree) Ancestry(name string) ([]string, error) {
	var chain []string
	for cur := name; cur != ""; cur = t.Nodes[cur].Parent {
		if slices.Contains(chain, cur) {
			return nil, fmt.Errorf("node %s: cycle %s", name, strings.Join(append(chain, cur), " → "))
		}
		if _, ok := t.Nodes[cur]; !ok {
			return nil, fmt.Errorf("node %s: parent %s is not a node", chain[len(chain)-1], cur)
		}
		chain = append(chain, cur)
	}
	return chain, nil
}

// Namespaces returns the concrete nodes whose objects can be computed,
// sorted: the namespaces the policy manages.
func (t *Tree) Namespaces() []string {
	var out []string
	for name, n := range t.Nodes {
		if !n.Abstract && !t.Broken[name] {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// Manages reports whether ns is a namespace of the tree.
func (t *Tree) Manages(ns string) bool {
	n, ok := t.Nodes[ns]
	return ok && !n.Abstract && !t.Broken[ns]
}

// Subtree returns the concrete namespaces at or below node, sorted.
func (t *Tree) Subtree(node string) []string {
	var out []string
	for _, ns := range t.Namespaces() {
		chain, _ := t.Ancestry(ns)
		if slices.Contains(chain, node) {
			out = append(out, ns)
		}
	}
	return out
}

// ObjectsOf returns the objects declared for the namespace of node: the
// union of the resources of its ancestry, merged per kind rule, rendered
// with Canopy's labels, sorted by key. The Namespace itself is not included.
func (t *Tree) ObjectsOf(node string) ([]*unstructured.Unstructured, error) {
	chain, err := t.Ancestry(node)
	if err != nil {
		return nil, err
	}
	byKey := map[ObjectKey]*unstructured.Unstructured{}
	from := map[ObjectKey]string{}
	for _, level := range chain {
		for i, raw := range t.Nodes[level].Resources {
			u, err := Decode(raw)
			if err != nil {
				return nil, fmt.Errorf("node %s: resources[%d]: %w", level, i, err)
			}
			u.SetNamespace(node)
			key := KeyOf(u)
			prev, dup := byKey[key]
			switch {
			case !dup:
				t.Render(u, "node "+level)
				byKey[key], from[key] = u, level
			case t.merge[key.GroupKind] == hierarchyv1alpha1.MergeMinimum:
				if err := mergeMinimum(prev, u); err != nil {
					return nil, fmt.Errorf("node %s: merging %s with node %s: %w", level, key, from[key], err)
				}
			default:
				return nil, fmt.Errorf("node %s: %s is also declared by node %s, and %s has no merge rule",
					node, key, levelPair(from[key], level), key.GroupKind)
			}
		}
	}
	return SortedObjects(byKey), nil
}

func levelPair(a, b string) string { return a + " and " + b }

// NamespaceObject returns the declared Namespace of a concrete node: the
// labels and annotations of its ancestry, nearest winning.
func (t *Tree) NamespaceObject(node string) *unstructured.Unstructured {
	chain, _ := t.Ancestry(node)
	labels, annotations := map[string]string{}, map[string]string{}
	for i := len(chain) - 1; i >= 0; i-- {
		maps.Copy(labels, t.Nodes[chain[i]].Labels)
		maps.Copy(annotations, t.Nodes[chain[i]].Annotations)
	}
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("Namespace")
	u.SetName(node)
	u.SetLabels(labels)
	u.SetAnnotations(annotations)
	t.Render(u, "node "+node)
	return u
}

// ClusterObjects returns the declared cluster-scoped objects, rendered.
func (t *Tree) ClusterObjects(raws []runtime.RawExtension) ([]*unstructured.Unstructured, []string) {
	byKey := map[ObjectKey]*unstructured.Unstructured{}
	var problems []string
	for i, raw := range raws {
		u, err := Decode(raw)
		if err != nil {
			problems = append(problems, fmt.Sprintf("clusterResources[%d]: %v", i, err))
			continue
		}
		u.SetNamespace("")
		if _, dup := byKey[KeyOf(u)]; dup {
			problems = append(problems, fmt.Sprintf("clusterResources[%d]: %s is declared twice", i, KeyOf(u)))
			continue
		}
		t.Render(u, "clusterResources")
		byKey[KeyOf(u)] = u
	}
	return SortedObjects(byKey), problems
}

// Render adds the labels and annotation every object Canopy writes carries.
func (t *Tree) Render(u *unstructured.Unstructured, where string) {
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[hierarchyv1alpha1.ManagedByLabel] = hierarchyv1alpha1.ManagedByValue
	labels[hierarchyv1alpha1.PolicyLabel] = t.Policy
	u.SetLabels(labels)
	annotations := u.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[hierarchyv1alpha1.SourceAnnotation] = t.Source + ", " + where
	u.SetAnnotations(annotations)
}

// Decode reads an embedded object, which needs apiVersion, kind and name.
func Decode(raw runtime.RawExtension) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(raw.Raw, &u.Object); err != nil {
		return nil, fmt.Errorf("not an object: %w", err)
	}
	if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
		return nil, fmt.Errorf("apiVersion, kind and metadata.name are required")
	}
	unstructured.RemoveNestedField(u.Object, "status")
	return u, nil
}

// mergeMinimum lowers into's spec.hard to from's, per resource, and adds the
// resources only from limits.
func mergeMinimum(into, from *unstructured.Unstructured) error {
	a, _, err := unstructured.NestedStringMap(into.Object, "spec", "hard")
	if err != nil {
		return err
	}
	b, _, err := unstructured.NestedStringMap(from.Object, "spec", "hard")
	if err != nil {
		return err
	}
	if a == nil {
		a = map[string]string{}
	}
	for name, v := range b {
		qb, err := resource.ParseQuantity(v)
		if err != nil {
			return fmt.Errorf("spec.hard.%s: %w", name, err)
		}
		cur, ok := a[name]
		if !ok {
			a[name] = v
			continue
		}
		qa, err := resource.ParseQuantity(cur)
		if err != nil {
			return fmt.Errorf("spec.hard.%s: %w", name, err)
		}
		if qb.Cmp(qa) < 0 {
			a[name] = v
		}
	}
	return unstructured.SetNestedStringMap(into.Object, a, "spec", "hard")
}

// SortedObjects returns the objects of byKey sorted by key.
func SortedObjects(byKey map[ObjectKey]*unstructured.Unstructured) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, 0, len(byKey))
	for _, k := range slices.SortedFunc(maps.Keys(byKey), CompareKeys) {
		out = append(out, byKey[k])
	}
	return out
}
