package dashboard

import (
	"context"
	"slices"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/report"
)

// GraphView is the dependency graph laid out for SVG by Graphviz's dot:
// what is depended on to the left, its dependants to the right, an arrow
// from each dependency to the policy or template that waits for it, a
// plain line from a template to its policy and from a member to its
// PolicySet. Coordinates are SVG user units.
type GraphView struct {
	Width, Height float64
	Nodes         []GraphNode
	Edges         []GraphEdge
}

// GraphNode is a box of the graph.
type GraphNode struct {
	// Key is the report.GraphNode ID, e.g. "Policy/ns/name".
	Key string
	// Label is what the box shows, in full: "Policy ns/name",
	// "ConfigurationPolicy name".
	Label string
	// Href links a policy or policy set to its page; empty for other objects.
	Href string
	// Template marks a policy template.
	Template bool
	State    policyv1.ComplianceState
	// Reason is why the node is not Compliant, when the model says.
	Reason string
	// Focus marks the policy or set whose page shows the graph.
	Focus bool
	// X and Y are the box's top-left corner, W and H its size.
	X, Y, W, H float64
}

// GraphEdge is one line: Path is its SVG path, Label the compliance a
// dependency requires, Met whether the dependency is met now; a line from
// a template or to a PolicySet member is Structural.
type GraphEdge struct {
	// From and To are the node keys of the report.GraphEdge: the dependant
	// and what it waits for or contains. The line is drawn from To to From.
	From, To       string
	Path           string
	Label          string
	LabelX, LabelY float64
	Met            bool
	Structural     bool
}

// GraphState is the JSON form of a graph's states, which the pages poll
// to repaint the graph drawn when they loaded.
type GraphState struct {
	Nodes []NodeState `json:"nodes"`
	Edges []EdgeState `json:"edges"`
}

// NodeState is the state of one node of a GraphState.
type NodeState struct {
	ID        string                   `json:"id"`
	Label     string                   `json:"label"`
	Compliant policyv1.ComplianceState `json:"compliant,omitempty"`
	Reason    string                   `json:"reason,omitempty"`
}

// EdgeState is whether one edge of a GraphState is met.
type EdgeState struct {
	From       string `json:"from"`
	To         string `json:"to"`
	Met        bool   `json:"met"`
	Structural bool   `json:"structural,omitempty"`
}

// graph is the union of the report.Graphs of several policies.
type graph struct {
	nodes map[string]report.GraphNode
	edges []report.GraphEdge
}

// buildGraph lays out the union of the dependency graphs of every root
// policy of inv. With focus (a node ID) it keeps what is connected to
// focus; without, what has a dependency or a dependant (and the policies
// of such templates).
func buildGraph(ctx context.Context, inv report.Inventory, focus string) (GraphView, error) {
	v := selectGraph(inv, focus)
	return v, v.layout(ctx)
}

// graphState returns the states of the graph buildGraph draws.
func graphState(inv report.Inventory, focus string) GraphState {
	v := selectGraph(inv, focus)
	s := GraphState{Nodes: []NodeState{}, Edges: []EdgeState{}}
	for _, n := range v.Nodes {
		s.Nodes = append(s.Nodes, NodeState{ID: n.Key, Label: n.Label, Compliant: n.State, Reason: n.Reason})
	}
	for _, e := range v.Edges {
		s.Edges = append(s.Edges, EdgeState{From: e.From, To: e.To, Met: e.Met, Structural: e.Structural})
	}
	return s
}

// selectGraph returns the nodes and edges buildGraph draws, not laid out.
func selectGraph(inv report.Inventory, focus string) GraphView {
	g := graph{nodes: map[string]report.GraphNode{}}
	seen := map[report.GraphEdge]bool{}
	add := func(one report.Graph) {
		for _, n := range one.Nodes {
			if _, ok := g.nodes[n.ID]; !ok {
				g.nodes[n.ID] = n
			}
		}
		for _, e := range one.Edges {
			if !seen[e] {
				seen[e] = true
				g.edges = append(g.edges, e)
			}
		}
	}
	for _, p := range inv.Policies {
		if _, replica := p.Labels[policyv1.RootPolicyLabel]; replica {
			continue
		}
		one, err := report.BuildGraph(report.PolicyRef{Namespace: p.Namespace, Name: p.Name}, inv)
		if err != nil {
			continue // Note: cannot happen, p is in inv
		}
		add(one)
	}
	for _, s := range inv.PolicySets {
		one, err := report.BuildGraph(report.PolicyRef{Namespace: s.Namespace, Name: s.Name}, inv)
		if err != nil {
			continue // Note: cannot happen, s is in inv
		}
		add(one)
	}
	kept := g.connected(focus)
	if focus == "" {
		kept = g.dependent()
	}
	return g.view(kept, focus)
}

// href is the page of a policy or policy set node on the hub.
func href(n report.GraphNode) string {
	if n.Missing || n.Policy != nil {
		return ""
	}
	switch n.Kind {
	case policyv1.PolicyKind:
		return "/policies/" + n.Namespace + "/" + n.Name
	case "PolicySet":
		return "/policysets/" + n.Namespace + "/" + n.Name
	}
	return ""
}

// dependent returns the nodes on a dependency or membership edge, and the
// policies of such templates.
func (g graph) dependent() map[string]bool {
	kept := map[string]bool{}
	for _, e := range g.edges {
		if e.Relation != report.RelationTemplate {
			kept[e.From], kept[e.To] = true, true
		}
	}
	for _, e := range g.edges {
		if e.Relation == report.RelationTemplate && kept[e.To] {
			kept[e.From] = true
		}
	}
	return kept
}

// connected returns the nodes connected to focus, whatever the direction.
func (g graph) connected(focus string) map[string]bool {
	kept := map[string]bool{}
	if _, ok := g.nodes[focus]; !ok {
		return kept
	}
	adjacent := map[string][]string{}
	for _, e := range g.edges {
		adjacent[e.From] = append(adjacent[e.From], e.To)
		adjacent[e.To] = append(adjacent[e.To], e.From)
	}
	kept[focus] = true
	for queue := []string{focus}; len(queue) > 0; queue = queue[1:] {
		for _, next := range adjacent[queue[0]] {
			if !kept[next] {
				kept[next] = true
				queue = append(queue, next)
			}
		}
	}
	return kept
}

// view returns the kept nodes and the edges between them, not laid out.
func (g graph) view(kept map[string]bool, focus string) GraphView {
	keys := make([]string, 0, len(kept))
	for k := range kept {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	v := GraphView{Nodes: []GraphNode{}, Edges: []GraphEdge{}}
	for _, k := range keys {
		n := g.nodes[k]
		v.Nodes = append(v.Nodes, GraphNode{Key: k, Label: n.Label(), Href: href(n), Template: n.Policy != nil,
			State: n.State, Reason: n.Reason, Focus: k == focus})
	}
	for _, e := range g.edges {
		if kept[e.From] && kept[e.To] {
			v.Edges = append(v.Edges, GraphEdge{From: e.From, To: e.To, Label: string(e.Compliance),
				Met:        e.Met, // report's rule, the one deps and explain print
				Structural: e.Relation == report.RelationTemplate || e.Relation == report.RelationMember})
		}
	}
	return v
}

// layout places the nodes and routes the edges of v. An edge is drawn
// from what is waited for or contained (To) to its dependant (From), so
// that dependencies are to the left.
func (v *GraphView) layout(ctx context.Context) error {
	nodes := make([]layoutNode, 0, len(v.Nodes))
	for _, n := range v.Nodes {
		nodes = append(nodes, layoutNode{Key: n.Key, Label: n.Label})
	}
	edges := make([]layoutEdge, 0, len(v.Edges))
	for _, e := range v.Edges {
		edges = append(edges, layoutEdge{From: e.To, To: e.From, Label: e.Label})
	}
	p, err := layoutGraph(ctx, nodes, edges)
	if err != nil {
		return err
	}
	v.Width, v.Height = p.Width, p.Height
	for i, b := range p.Boxes {
		v.Nodes[i].X, v.Nodes[i].Y, v.Nodes[i].W, v.Nodes[i].H = b.X, b.Y, b.W, b.H
	}
	for i, r := range p.Routes {
		v.Edges[i].Path, v.Edges[i].LabelX, v.Edges[i].LabelY = r.Path, r.LabelX, r.LabelY
	}
	return nil
}
