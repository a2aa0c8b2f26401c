package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// RenderTree prints g as a text tree from its root; a node reached again
// is printed once more without its children, marked "(see above)" or, on
// a cycle, "(cycle)".
//
//	Policy policies/app  [Pending]
//	├── needs Compliant: Policy policies/operator  [NonCompliant]
//	│   └── template ConfigurationPolicy operator-sub  [NonCompliant]
//	└── template ConfigurationPolicy app-config  [Pending]
func RenderTree(w io.Writer, g Graph, opts RenderOptions) error {
	t := treePrinter{g: g, opts: opts, nodes: map[string]GraphNode{}, out: map[string][]GraphEdge{},
		expanded: map[string]bool{}, onPath: map[string]bool{}}
	for _, n := range g.Nodes {
		t.nodes[n.ID] = n
	}
	for _, e := range g.Edges {
		t.out[e.From] = append(t.out[e.From], e)
	}
	t.print(g.Root, "", "", "")
	_, err := io.WriteString(w, t.b.String())
	return err
}

type treePrinter struct {
	g        Graph
	opts     RenderOptions
	nodes    map[string]GraphNode
	out      map[string][]GraphEdge
	expanded map[string]bool
	onPath   map[string]bool
	b        strings.Builder
}

// print writes the node id with the edge label that leads to it, then its
// children below, each line starting with indent.
func (t *treePrinter) print(id, label, first, indent string) {
	n := t.nodes[id]
	note := ""
	switch {
	case t.onPath[id]:
		note = "  (cycle)"
	case t.expanded[id] && len(t.out[id]) > 0:
		note = "  (see above)"
	}
	fmt.Fprintf(&t.b, "%s%s%s%s%s\n", first, label, n.Label(), t.state(n), note)
	if note != "" {
		return
	}
	t.expanded[id], t.onPath[id] = true, true
	defer delete(t.onPath, id)
	for i, e := range t.out[id] {
		branch, next := "├── ", "│   "
		if i == len(t.out[id])-1 {
			branch, next = "└── ", "    "
		}
		t.print(e.To, edgeLabel(e), indent+branch, indent+next)
	}
}

func (t *treePrinter) state(n GraphNode) string {
	switch {
	case n.Missing:
		return "  [not found]"
	case n.State == "":
		if n.Kind == policyv1.PolicyKind || n.Policy != nil {
			return "  [" + Unknown + "]"
		}
		return ""
	}
	return "  [" + cell(n.State, true, t.opts) + "]"
}

// edgeLabel says how an edge's target relates to its source.
func edgeLabel(e GraphEdge) string {
	switch e.Relation {
	case RelationTemplate:
		return "template "
	case RelationMember:
		return "member "
	case RelationExtraDependency:
		return "extra needs " + string(e.Compliance) + ": "
	}
	return "needs " + string(e.Compliance) + ": "
}

// DOT colours of the compliance states.
var dotColours = map[policyv1.ComplianceState]string{
	policyv1.Compliant:    "palegreen",
	policyv1.NonCompliant: "lightcoral",
	policyv1.Pending:      "khaki",
}

// RenderDOT prints g in Graphviz's DOT language: one box per node, filled
// with the colour of its state, and edges labelled with the required
// compliance (dashed for templates and members).
func RenderDOT(w io.Writer, g Graph) error {
	var b strings.Builder
	b.WriteString("digraph canopy {\n  rankdir=LR;\n  node [shape=box, style=\"rounded,filled\", fillcolor=white];\n")
	for _, n := range g.Nodes {
		label := n.Label()
		if n.Policy != nil {
			label = "template " + label
		}
		state := string(n.State)
		if n.Missing {
			state = "not found"
		}
		if state != "" {
			label += "\n" + state
		}
		attrs := "label=" + strconv.Quote(label)
		if c, ok := dotColours[n.State]; ok {
			attrs += ", fillcolor=" + c
		}
		if n.ID == g.Root {
			attrs += ", penwidth=2"
		}
		fmt.Fprintf(&b, "  %s [%s];\n", strconv.Quote(n.ID), attrs)
	}
	for _, e := range g.Edges {
		attrs := "label=" + strconv.Quote(string(e.Compliance))
		if e.Compliance == "" {
			attrs = "style=dashed, label=" + strconv.Quote(string(e.Relation))
		}
		fmt.Fprintf(&b, "  %s -> %s [%s];\n", strconv.Quote(e.From), strconv.Quote(e.To), attrs)
	}
	b.WriteString("}\n")
	_, err := io.WriteString(w, b.String())
	return err
}
