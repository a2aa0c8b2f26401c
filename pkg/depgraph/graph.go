package depgraph

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/compliance"
)

// Node is a vertex of the dependency graph of a cluster namespace: a
// Policy, or a policy template object.
type Node struct {
	// Kind is "Policy" or a template kind.
	Kind string
	// Name is the object's name.
	Name string
}

// Ref returns the node as cycle messages name it.
func (n Node) Ref() compliance.DependencyRef {
	return compliance.DependencyRef{Kind: n.Kind, Name: n.Name}
}

// String returns "Kind name".
func (n Node) String() string { return n.Ref().String() }

// PolicyNode is the part of one Policy the graph needs.
type PolicyNode struct {
	// Name is the Policy's name.
	Name string
	// Templates are its templates, each with the nodes it depends on.
	Templates []TemplateNode
}

// TemplateNode is one template of a Policy and what it depends on.
type TemplateNode struct {
	Node
	// DependsOn are the dependencies of the template in the same namespace.
	DependsOn []Node
}

// Graph maps each node to the nodes it waits for. A Policy waits for its
// templates (its compliance is theirs); a template waits for its
// dependencies.
type Graph map[Node][]Node

// BuildGraph returns the dependency graph of the policies of one namespace.
func BuildGraph(policies []PolicyNode) Graph {
	g := Graph{}
	for _, p := range policies {
		p.Edges(func(from Node, to ...Node) { g[from] = append(g[from], to...) })
	}
	return g
}

// Edges calls link for each node of the graph that p gives edges to, with
// those edges, in the order BuildGraph adds them: the Policy waits for each
// of its templates, and each template for its dependencies (link may get
// none). A Policy without templates gives no node an edge.
func (p PolicyNode) Edges(link func(from Node, to ...Node)) {
	self := Node{Kind: "Policy", Name: p.Name}
	for _, t := range p.Templates {
		link(self, t.Node)
		link(t.Node, t.DependsOn...)
	}
}

// GraphFor returns the dependency graph of policies, all in namespace.
func GraphFor(namespace string, templateKinds map[schema.GroupKind]bool, policies []policyv1.Policy) Graph {
	nodes := make([]PolicyNode, 0, len(policies))
	for i := range policies {
		nodes = append(nodes, PolicyNodeOf(namespace, templateKinds, &policies[i]))
	}
	return BuildGraph(nodes)
}

// PolicyNodeOf is the part of Policy p the dependency graph of namespace
// needs: its named templates and what each depends on in namespace.
func PolicyNodeOf(namespace string, templateKinds map[schema.GroupKind]bool, p *policyv1.Policy) PolicyNode {
	pn := PolicyNode{Name: p.Name}
	for _, pt := range p.Spec.PolicyTemplates {
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(pt.ObjectDefinition.Raw); err != nil || obj.GetName() == "" {
			continue
		}
		deps, _ := Resolve(namespace, templateKinds, p.Spec.Dependencies, pt.ExtraDependencies)
		tn := TemplateNode{Node: Node{Kind: obj.GetKind(), Name: obj.GetName()}}
		for _, d := range deps {
			if d.Namespace == namespace {
				tn.DependsOn = append(tn.DependsOn, Node{Kind: d.Kind, Name: d.Name})
			}
		}
		pn.Templates = append(pn.Templates, tn)
	}
	return pn
}
