package syncer

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

// tree is a HierarchyPolicy's declared tree, validated. It is pure data:
// building it reads nothing from the cluster.
type tree struct {
	// policy is the HierarchyPolicy's name, the value of PolicyLabel.
	policy string
	// source is the provenance annotation value of its objects.
	source string
	nodes  map[string]hierarchyv1alpha1.Node
	merge  map[schema.GroupKind]hierarchyv1alpha1.MergeRule
	// managed are the policy's managedKinds.
	managed []hierarchyv1alpha1.ManagedKind
	// problems are the validation errors, sorted; any problem holds every
	// deletion.
	problems []string
	// broken are the nodes whose ancestry cannot be computed (cycle, missing
	// parent, duplicate object): their namespaces are left alone.
	broken map[string]bool
}

// buildTree builds and validates the tree of p (newTree memoizes it).
func buildTree(p *hierarchyv1alpha1.HierarchyPolicy) *tree {
	t := &tree{
		policy:  p.Name,
		source:  hierarchyv1alpha1.HierarchyPolicyKind + " " + p.Namespace + "/" + p.Name,
		nodes:   map[string]hierarchyv1alpha1.Node{},
		merge:   map[schema.GroupKind]hierarchyv1alpha1.MergeRule{},
		broken:  map[string]bool{},
		managed: p.Spec.ManagedKinds,
	}
	for _, mk := range p.Spec.ManagedKinds {
		if mk.Merge != "" {
			t.merge[schema.GroupKind{Group: mk.Group, Kind: mk.Kind}] = mk.Merge
		}
	}
	for _, n := range p.Spec.Nodes {
		if _, dup := t.nodes[n.Name]; dup {
			t.problems = append(t.problems, fmt.Sprintf("node %s is declared twice", n.Name))
		}
		t.nodes[n.Name] = n
		if reservedNamespaces[n.Name] {
			t.problems = append(t.problems, fmt.Sprintf("node %s: namespace %s is reserved", n.Name, n.Name))
			t.broken[n.Name] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(t.nodes)) {
		if _, err := t.ancestry(name); err != nil {
			t.problems = append(t.problems, err.Error())
			t.broken[name] = true
			continue
		}
		if _, err := t.objectsOf(name); err != nil {
			t.problems = append(t.problems, err.Error())
			t.broken[name] = true
		}
	}
	for _, g := range p.Spec.Generators { // else the generator fails on every evaluation, unreported
		if _, err := metav1.LabelSelectorAsSelector(&g.NamespaceSelector); err != nil {
			t.problems = append(t.problems, fmt.Sprintf("generator %s: namespaceSelector: %v", g.Name, err))
		}
	}
	slices.Sort(t.problems)
	t.problems = slices.Compact(t.problems)
	return t
}

// valid reports whether the tree has no problem.
func (t *tree) valid() bool { return len(t.problems) == 0 }

// ancestry returns name and its ancestors, nearest first.
func (t *tree) ancestry(name string) ([]string, error) {
	var chain []string
	for cur := name; cur != ""; cur = t.nodes[cur].Parent {
		if slices.Contains(chain, cur) {
			return nil, fmt.Errorf("node %s: cycle %s", name, strings.Join(append(chain, cur), " → "))
		}
		if _, ok := t.nodes[cur]; !ok {
			return nil, fmt.Errorf("node %s: parent %s is not a node", chain[len(chain)-1], cur)
		}
		chain = append(chain, cur)
	}
	return chain, nil
}

// namespaces returns the concrete nodes whose objects can be computed,
// sorted: the namespaces the policy manages.
func (t *tree) namespaces() []string {
	var out []string
	for name, n := range t.nodes {
		if !n.Abstract && !t.broken[name] {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// manages reports whether ns is a namespace of the tree.
func (t *tree) manages(ns string) bool {
	n, ok := t.nodes[ns]
	return ok && !n.Abstract && !t.broken[ns]
}

// subtree returns the concrete namespaces at or below node, sorted.
func (t *tree) subtree(node string) []string {
	var out []string
	for _, ns := range t.namespaces() {
		chain, _ := t.ancestry(ns)
		if slices.Contains(chain, node) {
			out = append(out, ns)
		}
	}
	return out
}

// objectsOf returns the objects declared for the namespace of node: the
// union of the resources of its ancestry, merged per kind rule, rendered
// with Canopy's labels, sorted by key. The Namespace itself is not included.
func (t *tree) objectsOf(node string) ([]*unstructured.Unstructured, error) {
	chain, err := t.ancestry(node)
	if err != nil {
		return nil, err
	}
	byKey := map[objectKey]*unstructured.Unstructured{}
	from := map[objectKey]string{}
	for _, level := range chain {
		for i, raw := range t.nodes[level].Resources {
			u, err := decode(raw)
			if err != nil {
				return nil, fmt.Errorf("node %s: resources[%d]: %w", level, i, err)
			}
			u.SetNamespace(node)
			key := keyOf(u)
			prev, dup := byKey[key]
			switch {
			case !dup:
				t.render(u, "node "+level)
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
	return sortedObjects(byKey), nil
}

func levelPair(a, b string) string { return a + " and " + b }

// namespaceObject returns the declared Namespace of a concrete node: the
// labels and annotations of its ancestry, nearest winning.
func (t *tree) namespaceObject(node string) *unstructured.Unstructured {
	chain, _ := t.ancestry(node)
	labels, annotations := map[string]string{}, map[string]string{}
	for i := len(chain) - 1; i >= 0; i-- {
		maps.Copy(labels, t.nodes[chain[i]].Labels)
		maps.Copy(annotations, t.nodes[chain[i]].Annotations)
	}
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("Namespace")
	u.SetName(node)
	u.SetLabels(labels)
	u.SetAnnotations(annotations)
	t.render(u, "node "+node)
	return u
}

// clusterObjects returns the declared cluster-scoped objects, rendered.
func (t *tree) clusterObjects(raws []runtime.RawExtension) ([]*unstructured.Unstructured, []string) {
	byKey := map[objectKey]*unstructured.Unstructured{}
	var problems []string
	for i, raw := range raws {
		u, err := decode(raw)
		if err != nil {
			problems = append(problems, fmt.Sprintf("clusterResources[%d]: %v", i, err))
			continue
		}
		u.SetNamespace("")
		if _, dup := byKey[keyOf(u)]; dup {
			problems = append(problems, fmt.Sprintf("clusterResources[%d]: %s is declared twice", i, keyOf(u)))
			continue
		}
		t.render(u, "clusterResources")
		byKey[keyOf(u)] = u
	}
	return sortedObjects(byKey), problems
}

// render adds the labels and annotation every object Canopy writes carries.
func (t *tree) render(u *unstructured.Unstructured, where string) {
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[hierarchyv1alpha1.ManagedByLabel] = hierarchyv1alpha1.ManagedByValue
	labels[hierarchyv1alpha1.PolicyLabel] = t.policy
	u.SetLabels(labels)
	annotations := u.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[hierarchyv1alpha1.SourceAnnotation] = t.source + ", " + where
	u.SetAnnotations(annotations)
}

// decode reads an embedded object, which needs apiVersion, kind and name.
func decode(raw runtime.RawExtension) (*unstructured.Unstructured, error) {
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

func sortedObjects(byKey map[objectKey]*unstructured.Unstructured) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, 0, len(byKey))
	for _, k := range slices.SortedFunc(maps.Keys(byKey), compareKeys) {
		out = append(out, byKey[k])
	}
	return out
}
