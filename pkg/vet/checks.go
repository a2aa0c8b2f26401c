package vet

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/hierarchy"
)

var (
	policyGK          = schema.GroupKind{Group: policyv1.GroupName, Kind: "Policy"}
	hierarchyPolicyGK = schema.GroupKind{Group: hierarchyv1alpha1.GroupName, Kind: hierarchyv1alpha1.HierarchyPolicyKind}
	subNamespaceGK    = schema.GroupKind{Group: hierarchyv1alpha1.GroupName, Kind: hierarchyv1alpha1.SubNamespaceKind}
)

// maxPolicyNameLength bounds namespace + name of a root Policy: the label
// value "<namespace>.<name>" of its replicas must fit in 63 characters.
const maxPolicyNameLength = 62

// templatesOf returns the objects embedded in a Policy's policy-templates,
// and the collisions between them (same kind and name).
func templatesOf(d Document) ([]Document, []Finding) {
	if d.GroupVersionKind().GroupKind() != policyGK {
		return nil, nil
	}
	spec, _ := d.Object["spec"].(map[string]any)
	list, _ := spec["policy-templates"].([]any)
	var out []Document
	var findings []Finding
	seen := map[string]string{}
	for i, item := range list {
		path := fmt.Sprintf("spec.policy-templates[%d].objectDefinition", i)
		m, _ := item.(map[string]any)
		obj, _ := m["objectDefinition"].(map[string]any)
		node := exactNode(d.Node, path)
		if obj == nil || node == nil {
			continue // the schema check reports it
		}
		t := Document{File: d.File, Node: node, Object: obj, Path: fmt.Sprintf("policy-templates[%d]", i), Parent: d.String()}
		out = append(out, t)
		key := t.GroupVersionKind().Kind + " " + t.Name()
		if prev, dup := seen[key]; dup {
			findings = append(findings, at(d, path+".metadata.name", SeverityError, CheckCollision,
				fmt.Sprintf("template %s is also %s: template kinds and names must be unique in a policy", key, prev)))
		}
		seen[key] = fmt.Sprintf("policy-templates[%d]", i)
	}
	return out, findings
}

// checkHierarchyPolicy reports the problems of a HierarchyPolicy's tree,
// as the syncer's TreeValid condition would.
func checkHierarchyPolicy(d Document) []Finding {
	if d.GroupVersionKind().GroupKind() != hierarchyPolicyGK {
		return nil
	}
	p := &hierarchyv1alpha1.HierarchyPolicy{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(d.Object, p); err != nil {
		return nil // the schema check reports it
	}
	var out []Finding
	for _, problem := range hierarchy.TreeProblems(p) {
		out = append(out, at(d, problemPath(p, problem), SeverityError, CheckHierarchy, problem))
	}
	return out
}

// problemPath points a tree problem ("node x: ...", "clusterResources[2]:
// ...") at its field.
func problemPath(p *hierarchyv1alpha1.HierarchyPolicy, problem string) string {
	if rest, ok := strings.CutPrefix(problem, "node "); ok {
		name, _, _ := strings.Cut(rest, ":")
		for i, n := range p.Spec.Nodes {
			if n.Name == name {
				return fmt.Sprintf("spec.nodes[%d]", i)
			}
		}
		return "spec.nodes"
	}
	if strings.HasPrefix(problem, "clusterResources[") {
		idx, _, _ := strings.Cut(problem, "]")
		return "spec." + idx + "]"
	}
	return "spec"
}

// checkNameLength enforces the admission policy of deploy/crds on root
// Policies: namespace + name at most 62 characters.
func (c *Checker) checkNameLength(docs []Document) []Finding {
	var out []Finding
	for _, d := range docs {
		if d.GroupVersionKind().GroupKind() != policyGK {
			continue
		}
		labels, _, _ := unstructured.NestedStringMap(d.Object, "metadata", "labels")
		if _, replica := labels[policyv1.RootPolicyLabel]; replica {
			continue
		}
		ns, assumed := d.Namespace(), ""
		if ns == "" {
			ns, assumed = c.opts.DefaultNamespace, fmt.Sprintf(" (namespace %s assumed)", c.opts.DefaultNamespace)
		}
		if n := len(ns) + len(d.Name()); n > maxPolicyNameLength {
			out = append(out, at(d, "metadata.name", SeverityError, CheckNameLength, fmt.Sprintf(
				"the combined length of the policy namespace and name cannot exceed %d characters: %s/%s has %d%s "+
					"(the replica label value \"<namespace>.<name>\" must fit in 63 characters)", maxPolicyNameLength, ns, d.Name(), n, assumed)))
		}
	}
	return out
}

// checkCollisions reports documents with the kind, namespace and name of
// an earlier one: an error when they differ, a warning when they are the
// same object twice.
func (c *Checker) checkCollisions(docs []Document) []Finding {
	seen := map[string]Document{}
	var out []Finding
	for _, d := range docs {
		gvk := d.GroupVersionKind()
		if gvk.Kind == "" || d.Name() == "" {
			continue
		}
		key := gvk.GroupKind().String() + "|" + d.Namespace() + "|" + d.Name()
		if prev, dup := seen[key]; dup {
			sev, msg := SeverityError, "the later document would replace the earlier"
			if equality.Semantic.DeepEqual(prev.Object, d.Object) {
				sev, msg = SeverityWarning, "identical, so harmless"
			}
			out = append(out, at(d, "metadata.name", sev, CheckCollision,
				fmt.Sprintf("also declared at %s:%d: %s", prev.File, prev.Line(), msg)))
			continue
		}
		seen[key] = d
	}
	return out
}
