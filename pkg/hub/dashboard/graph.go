package dashboard

import (
	"cmp"
	"fmt"
	"slices"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/report"
)

// Layout of the dependency graph, in SVG user units.
const (
	nodeWidth  = 230
	nodeHeight = 40
	columnGap  = 90
	rowGap     = 22
	margin     = 16
	labelLimit = 32
)

// GraphView is the dependency graph laid out for SVG: what is depended on
// to the left, its dependants to the right, an arrow from each dependency
// to the policy or template that waits for it, a plain line from a
// template to its policy.
type GraphView struct {
	Width, Height int
	// NodeWidth and NodeHeight are the size of every box.
	NodeWidth, NodeHeight int
	Nodes                 []GraphNode
	Edges                 []GraphEdge
}

// GraphNode is a box of the graph.
type GraphNode struct {
	// Key is the report.GraphNode ID, e.g. "Policy/ns/name".
	Key string
	// Label is what the box shows (shortened), Title the full name.
	Label, Title string
	// Href links a policy to its page; empty for other objects.
	Href string
	// Template marks a policy template.
	Template bool
	State    policyv1.ComplianceState
	// Focus marks the policy whose page shows the graph.
	Focus bool
	X, Y  int
	layer int
}

// GraphEdge is one line: Path is its SVG path, Label the compliance a
// dependency requires, Met whether the dependency is met now; a line from
// a template or to a PolicySet member is Structural.
type GraphEdge struct {
	Path           string
	Label          string
	LabelX, LabelY int
	Met            bool
	Structural     bool
}

// graph is the union of the report.Graphs of several policies.
type graph struct {
	nodes map[string]*GraphNode
	edges []report.GraphEdge
}

// buildGraph lays out the union of the dependency graphs of every root
// policy of inv. With focus (a node ID) it keeps what is connected to
// focus; without, what has a dependency or a dependant (and the policies
// of such templates).
func buildGraph(inv report.Inventory, focus string) GraphView {
	g := graph{nodes: map[string]*GraphNode{}}
	seen := map[report.GraphEdge]bool{}
	for _, p := range inv.Policies {
		if _, replica := p.Labels[policyv1.RootPolicyLabel]; replica {
			continue
		}
		one, err := report.BuildGraph(report.PolicyRef{Namespace: p.Namespace, Name: p.Name}, inv)
		if err != nil {
			continue // Note: cannot happen, p is in inv
		}
		for _, n := range one.Nodes {
			if g.nodes[n.ID] == nil {
				g.nodes[n.ID] = newGraphNode(n)
			}
		}
		for _, e := range one.Edges {
			if !seen[e] {
				seen[e] = true
				g.edges = append(g.edges, e)
			}
		}
	}
	kept := g.connected(focus)
	if focus == "" {
		kept = g.dependent()
	}
	return g.layout(kept, focus)
}

func newGraphNode(n report.GraphNode) *GraphNode {
	v := &GraphNode{Key: n.ID, Title: n.Label(), Label: shorten(n.Label()), State: n.State, Template: n.Policy != nil}
	if n.Kind == policyv1.PolicyKind && !n.Missing {
		v.Href, v.Label = "/policies/"+n.Namespace+"/"+n.Name, shorten(n.Namespace+"/"+n.Name)
	}
	return v
}

func shorten(s string) string {
	if r := []rune(s); len(r) > labelLimit {
		return string(r[:labelLimit-1]) + "…"
	}
	return s
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
	if g.nodes[focus] == nil {
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

// layout puts each node one column right of the rightmost node it points
// to, and draws the edges between kept nodes.
func (g graph) layout(kept map[string]bool, focus string) GraphView {
	keys := make([]string, 0, len(kept))
	for k := range kept {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := map[string][]string{}
	for _, e := range g.edges {
		if kept[e.From] && kept[e.To] {
			out[e.From] = append(out[e.From], e.To)
		}
	}
	state := map[string]int{}
	for _, k := range keys {
		g.assignLayer(k, out, state)
	}
	v := GraphView{NodeWidth: nodeWidth, NodeHeight: nodeHeight, Nodes: []GraphNode{}, Edges: []GraphEdge{}}
	rows := map[int]int{}
	for _, k := range keys {
		n := g.nodes[k]
		n.Focus = k == focus
		n.X = margin + n.layer*(nodeWidth+columnGap)
		n.Y = margin + rows[n.layer]*(nodeHeight+rowGap)
		rows[n.layer]++
		v.Width = max(v.Width, n.X+nodeWidth+margin)
		v.Height = max(v.Height, n.Y+nodeHeight+margin)
		v.Nodes = append(v.Nodes, *n)
	}
	for _, e := range g.edges {
		if kept[e.From] && kept[e.To] {
			v.Edges = append(v.Edges, edge(g.nodes[e.To], g.nodes[e.From], e))
		}
	}
	slices.SortFunc(v.Edges, func(a, b GraphEdge) int { return cmp.Compare(a.Path, b.Path) })
	return v
}

// assignLayer sets the layer of k after those of the nodes it points to;
// an edge back to a node on the DFS stack (a cycle) is ignored.
func (g graph) assignLayer(k string, out map[string][]string, state map[string]int) int {
	n := g.nodes[k]
	if state[k] != 0 {
		return n.layer
	}
	state[k] = 1 // on the stack
	for _, to := range out[k] {
		if state[to] != 1 {
			n.layer = max(n.layer, g.assignLayer(to, out, state)+1)
		}
	}
	state[k] = 2 // done
	return n.layer
}

// edge draws e from the box it points to (left) to the box it starts from.
func edge(from, to *GraphNode, e report.GraphEdge) GraphEdge {
	x1, y1 := from.X+nodeWidth, from.Y+nodeHeight/2
	x2, y2 := to.X, to.Y+nodeHeight/2
	if to.X <= from.X { // a cycle: go back below the boxes
		x1, y1, x2 = from.X+nodeWidth/2, from.Y+nodeHeight, to.X+nodeWidth/2
		y2 = to.Y + nodeHeight
	}
	bend := max((x2-x1)/2, columnGap/2)
	return GraphEdge{
		Path:  fmt.Sprintf("M %d %d C %d %d, %d %d, %d %d", x1, y1, x1+bend, y1, x2-bend, y2, x2, y2),
		Label: string(e.Compliance), LabelX: (x1 + x2) / 2, LabelY: (y1+y2)/2 - 5,
		Met:        e.Compliance != "" && from.State == e.Compliance,
		Structural: e.Relation == report.RelationTemplate || e.Relation == report.RelationMember,
	}
}
