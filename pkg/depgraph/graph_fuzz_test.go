package depgraph

import (
	"fmt"
	"slices"
	"testing"
)

// fuzzPolicies decodes bytes into the policies of one namespace: each
// triple (policy, template, dependency) adds template to policy (names from
// small alphabets, so that they collide) and makes it wait for dependency,
// a Policy or a template.
func fuzzPolicies(data []byte) []PolicyNode {
	byName := map[string]*PolicyNode{}
	var order []string
	for i := 0; i+2 < len(data); i += 3 {
		p := fmt.Sprint("p", data[i]%4)
		tmpl := cp(fmt.Sprint("t", data[i+1]%6))
		dep := cp(fmt.Sprint("t", data[i+2]%6))
		if data[i+2]&0x80 != 0 {
			dep = pol(fmt.Sprint("p", data[i+2]%4))
		}
		if byName[p] == nil {
			byName[p] = &PolicyNode{Name: p}
			order = append(order, p)
		}
		pn := byName[p]
		j := slices.IndexFunc(pn.Templates, func(t TemplateNode) bool { return t.Node == tmpl })
		if j < 0 {
			pn.Templates = append(pn.Templates, TemplateNode{Node: tmpl})
			j = len(pn.Templates) - 1
		}
		pn.Templates[j].DependsOn = append(pn.Templates[j].DependsOn, dep)
	}
	out := make([]PolicyNode, 0, len(order))
	for _, name := range order {
		out = append(out, *byName[name])
	}
	return out
}

// reversed returns the same policies listed backwards at every level.
func reversed(policies []PolicyNode) []PolicyNode {
	out := slices.Clone(policies)
	slices.Reverse(out)
	for i := range out {
		out[i].Templates = slices.Clone(out[i].Templates)
		slices.Reverse(out[i].Templates)
		for j := range out[i].Templates {
			out[i].Templates[j].DependsOn = slices.Clone(out[i].Templates[j].DependsOn)
			slices.Reverse(out[i].Templates[j].DependsOn)
		}
	}
	return out
}

// shortestCycle is the brute-force reference: the length of the shortest
// closed walk from n back to n over simple paths, 0 when there is none.
func shortestCycle(g Graph, n Node) int {
	best := 0
	var visit func(cur Node, depth int, seen map[Node]bool)
	visit = func(cur Node, depth int, seen map[Node]bool) {
		for _, next := range g[cur] {
			switch {
			case next == n:
				if best == 0 || depth+1 < best {
					best = depth + 1
				}
			case !seen[next] && (best == 0 || depth+1 < best):
				seen[next] = true
				visit(next, depth+1, seen)
				delete(seen, next)
			}
		}
	}
	visit(n, 0, map[Node]bool{n: true})
	return best
}

// FuzzDependencyGraph checks cycle detection over the dependency graph of
// arbitrary policies against a brute-force search: a template is reported
// on a cycle exactly when it is on one, the cycle reported is a shortest
// one made of the graph's edges, and the message does not depend on the
// order policies, templates and dependencies are listed in.
func FuzzDependencyGraph(f *testing.F) {
	f.Add([]byte{0, 1, 0x82, 2, 2, 0x80})                // p0/t1 -> p2, p2/t2 -> p0
	f.Add([]byte{0, 1, 2, 0, 2, 1})                      // t1 <-> t2 in one policy
	f.Add([]byte{0, 1, 1})                               // a template waiting on itself
	f.Add([]byte{0, 1, 0x80})                            // a template waiting on its own policy
	f.Add([]byte{0, 1, 2, 1, 2, 3, 2, 3, 4, 3, 4, 0x85}) // a long chain closing through a policy
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 60 { // the reference is exponential
			t.Skip("too large for the brute-force reference")
		}
		policies := fuzzPolicies(data)
		g, rg := BuildGraph(policies), BuildGraph(reversed(policies))
		for _, p := range policies {
			for _, tmpl := range p.Templates {
				checkTemplate(t, g, rg, p.Name, tmpl.Node)
			}
		}
	})
}

func checkTemplate(t *testing.T, g, rg Graph, policy string, n Node) {
	t.Helper()
	want := shortestCycle(g, n)
	cycle := g.CycleThrough(n)
	if (want == 0) != (cycle == nil) || (cycle != nil && len(cycle)-1 != want) {
		t.Fatalf("%s/%v: cycle %v, brute force finds length %d", policy, n, cycle, want)
	}
	for i := 0; i+1 < len(cycle); i++ {
		if !hasEdge(g, cycle[i], cycle[i+1]) {
			t.Fatalf("%s/%v: cycle %v uses a missing edge", policy, n, cycle)
		}
	}
	msg := g.CycleMessage(policy, n)
	if (msg == "") != (cycle == nil) {
		t.Fatalf("%s/%v: message %q for cycle %v", policy, n, msg, cycle)
	}
	if again := g.CycleMessage(policy, n); again != msg {
		t.Fatalf("%s/%v: %q then %q", policy, n, msg, again)
	}
	if other := rg.CycleMessage(policy, n); other != msg {
		t.Fatalf("%s/%v: %q, but %q with the input listed backwards", policy, n, msg, other)
	}
}
