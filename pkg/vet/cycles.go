package vet

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/depgraph"
	"github.com/canopy-policy/canopy/pkg/templatekinds"
)

// templateKinds are the policy template kinds vet knows, those the agent
// evaluates (and whose CRDs it ships); dependencies on them are looked up
// in the policy's namespace, as on the cluster.
var templateKinds = templatekinds.Evaluated()

// policyDoc is a Policy document, decoded.
type policyDoc struct {
	doc    Document
	policy policyv1.Policy
}

// checkDependencyCycles builds, per namespace, the dependency graph of the
// Policies given, as templatesync does (pkg/depgraph), and reports each
// template on a cycle.
func (c *Checker) checkDependencyCycles(docs []Document) []Finding {
	byNamespace := map[string][]policyDoc{}
	for _, d := range docs {
		if d.GroupVersionKind().GroupKind() != policyGK {
			continue
		}
		var p policyv1.Policy
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(d.Object, &p); err != nil {
			continue // the schema check reports it
		}
		if p.Namespace == "" {
			p.Namespace = c.opts.DefaultNamespace
		}
		byNamespace[p.Namespace] = append(byNamespace[p.Namespace], policyDoc{doc: d, policy: p})
	}
	var out []Finding
	for ns, pds := range byNamespace {
		policies := make([]policyv1.Policy, len(pds))
		for i := range pds {
			policies[i] = pds[i].policy
		}
		g := depgraph.GraphFor(ns, templateKinds, policies)
		for _, pd := range pds {
			out = append(out, cyclesOf(g, pd)...)
		}
	}
	return out
}

// cyclesOf reports the templates of one policy that are on a cycle of g.
func cyclesOf(g depgraph.Graph, pd policyDoc) []Finding {
	var out []Finding
	for i, pt := range pd.policy.Spec.PolicyTemplates {
		var meta struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(pt.ObjectDefinition.Raw, &meta); err != nil || meta.Metadata.Name == "" {
			continue
		}
		msg := g.CycleMessage(pd.policy.Name, depgraph.Node{Kind: meta.Kind, Name: meta.Metadata.Name})
		if msg != "" {
			out = append(out, at(pd.doc, fmt.Sprintf("spec.policy-templates[%d]", i), SeverityError, CheckDependencyCycle,
				fmt.Sprintf("template %s %s: %s", meta.Kind, meta.Metadata.Name, msg)))
		}
	}
	return out
}

// checkSubNamespaceCycles reports SubNamespaces (and Namespaces labelled
// with a parent) whose parents lead back to themselves.
func checkSubNamespaceCycles(docs []Document) []Finding {
	g := depgraph.Graph{}
	var children []Document
	for _, d := range docs {
		parent, child := parentEdge(d)
		if parent == "" {
			continue
		}
		n := depgraph.Node{Kind: "Namespace", Name: child}
		g[n] = append(g[n], depgraph.Node{Kind: "Namespace", Name: parent})
		children = append(children, d)
	}
	var out []Finding
	for _, d := range children {
		_, child := parentEdge(d)
		cycle := g.CycleThrough(depgraph.Node{Kind: "Namespace", Name: child})
		if cycle == nil {
			continue
		}
		names := make([]string, len(cycle))
		for i, n := range cycle {
			names[i] = n.Name
		}
		out = append(out, at(d, "metadata", SeverityError, CheckHierarchy,
			"namespace hierarchy cycle (child → parent): "+strings.Join(names, " → ")))
	}
	return out
}

// parentEdge returns the parent and child namespaces d declares: a
// SubNamespace makes its name a child of its namespace; a Namespace names
// its parent with a label.
func parentEdge(d Document) (parent, child string) {
	switch d.GroupVersionKind().GroupKind() {
	case subNamespaceGK:
		return d.Namespace(), d.Name()
	case schema.GroupKind{Kind: "Namespace"}:
		labels, _, _ := unstructured.NestedStringMap(d.Object, "metadata", "labels")
		return labels[hierarchyv1alpha1.ParentLabel], d.Name()
	}
	return "", ""
}
