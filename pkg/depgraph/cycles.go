package depgraph

import (
	"slices"
	"strings"

	"github.com/canopy-policy/canopy/pkg/compliance"
)

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
	refs := make([]compliance.DependencyRef, len(cycle))
	for i, n := range cycle {
		refs[i] = n.Ref()
	}
	return compliance.CycleMessage(refs)
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
