package templatesync

import (
	"slices"
	"strings"
)

// Node is a vertex of the dependency graph of a cluster namespace: a
// Policy, or a policy template object.
type Node struct {
	// Kind is "Policy" or a template kind.
	Kind string
	// Name is the object's name.
	Name string
}

// String returns "Kind name".
func (n Node) String() string { return n.Kind + " " + n.Name }

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
		pn := Node{Kind: "Policy", Name: p.Name}
		for _, t := range p.Templates {
			g[pn] = append(g[pn], t.Node)
			g[t.Node] = append(g[t.Node], t.DependsOn...)
		}
	}
	return g
}

// CycleThrough returns a shortest cycle through n, starting and ending at
// n, or nil when n is on no cycle.
func (g Graph) CycleThrough(n Node) []Node {
	parent := map[Node]Node{}
	queue := []Node{n}
	visited := map[Node]bool{}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, next := range sortedNodes(g[cur]) {
			if next == n {
				return pathTo(parent, n, cur)
			}
			if !visited[next] {
				visited[next] = true
				parent[next] = cur
				queue = append(queue, next)
			}
		}
	}
	return nil
}

// pathTo returns n -> ... -> last -> n following parent links back from last.
func pathTo(parent map[Node]Node, n, last Node) []Node {
	path := []Node{n}
	for cur := last; cur != n; cur = parent[cur] {
		path = append(path, cur)
	}
	slices.Reverse(path[1:])
	return append(path, n)
}

func sortedNodes(nodes []Node) []Node {
	out := slices.Clone(nodes)
	slices.SortFunc(out, func(a, b Node) int {
		if c := strings.Compare(a.Kind, b.Kind); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return slices.Compact(out)
}

// CycleMessage returns the message reported on template t of Policy
// policy when t is on a dependency cycle, or "" when it is not:
//
//	dependency cycle: Policy a -> Policy b -> Policy a
//
// The cycle starts at the reporting Policy when it is on the cycle; when
// the cycle passes through two or more Policies, only the Policies are
// named, since each waits for its own templates anyway.
func (g Graph) CycleMessage(policy string, t Node) string {
	cycle := g.CycleThrough(t)
	if cycle == nil {
		return ""
	}
	cycle = rotateTo(cycle, Node{Kind: "Policy", Name: policy})
	var policies []Node
	for _, n := range cycle {
		if n.Kind == "Policy" {
			policies = append(policies, n)
		}
	}
	if len(policies) >= 3 { // at least two distinct Policies: first and last are the same one
		cycle = policies
	}
	names := make([]string, len(cycle))
	for i, n := range cycle {
		names[i] = n.String()
	}
	return "dependency cycle: " + strings.Join(names, " -> ")
}

// rotateTo makes the closed walk cycle start and end at n, if n is on it.
func rotateTo(cycle []Node, n Node) []Node {
	i := slices.Index(cycle[:len(cycle)-1], n)
	if i <= 0 {
		return cycle
	}
	open := slices.Concat(cycle[i:len(cycle)-1], cycle[:i])
	return append(open, n)
}
