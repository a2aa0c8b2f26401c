package depgraph

import (
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func cp(name string) Node  { return Node{Kind: "ConfigurationPolicy", Name: name} }
func pol(name string) Node { return Node{Kind: "Policy", Name: name} }

func TestCycleMessage(t *testing.T) {
	onPolicy := func(p, tmpl, dep string) PolicyNode {
		return PolicyNode{Name: p, Templates: []TemplateNode{{Node: cp(tmpl), DependsOn: []Node{pol(dep)}}}}
	}
	for _, tc := range []struct {
		name     string
		policies []PolicyNode
		want     map[string]string // "policy/template" → message
	}{
		{
			name: "chain without cycle",
			policies: []PolicyNode{{Name: "p", Templates: []TemplateNode{
				{Node: cp("t1")}, {Node: cp("t2"), DependsOn: []Node{cp("t1")}}, {Node: cp("t3"), DependsOn: []Node{cp("t2")}},
			}}},
			want: map[string]string{"p/t1": "", "p/t2": "", "p/t3": ""},
		},
		{
			name:     "two policies",
			policies: []PolicyNode{onPolicy("a", "ta", "b"), onPolicy("b", "tb", "a")},
			want: map[string]string{
				"a/ta": "dependency cycle: Policy a -> Policy b -> Policy a",
				"b/tb": "dependency cycle: Policy b -> Policy a -> Policy b",
			},
		},
		{
			name:     "three policies, and one waiting on the cycle",
			policies: []PolicyNode{onPolicy("a", "ta", "b"), onPolicy("b", "tb", "c"), onPolicy("c", "tc", "a"), onPolicy("d", "td", "a")},
			want: map[string]string{
				"a/ta": "dependency cycle: Policy a -> Policy b -> Policy c -> Policy a",
				"c/tc": "dependency cycle: Policy c -> Policy a -> Policy b -> Policy c",
				"d/td": "",
			},
		},
		{
			name: "within one policy",
			policies: []PolicyNode{{Name: "p", Templates: []TemplateNode{
				{Node: cp("t1"), DependsOn: []Node{cp("t2")}}, {Node: cp("t2"), DependsOn: []Node{cp("t1")}},
			}}},
			want: map[string]string{"p/t1": "dependency cycle: ConfigurationPolicy t1 -> ConfigurationPolicy t2 -> ConfigurationPolicy t1"},
		},
		{
			name:     "a template waiting on its own policy",
			policies: []PolicyNode{onPolicy("p", "t", "p")},
			want:     map[string]string{"p/t": "dependency cycle: Policy p -> ConfigurationPolicy t -> Policy p"},
		},
		{
			name:     "a template waiting on itself",
			policies: []PolicyNode{{Name: "p", Templates: []TemplateNode{{Node: cp("t"), DependsOn: []Node{cp("t")}}}}},
			want:     map[string]string{"p/t": "dependency cycle: ConfigurationPolicy t -> ConfigurationPolicy t"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			graph := BuildGraph(tc.policies)
			for key, want := range tc.want {
				p, tmpl, _ := strings.Cut(key, "/")
				g.Expect(graph.CycleMessage(p, cp(tmpl))).To(Equal(want), key)
			}
		})
	}
}

// FuzzCycleThrough checks CycleThrough on arbitrary graphs: every cycle it
// returns is made of edges of the graph, and it finds one exactly when the
// node can reach itself.
func FuzzCycleThrough(f *testing.F) {
	f.Add([]byte{0, 1, 1, 0})
	f.Add([]byte{0, 1, 1, 2, 2, 0, 3, 0})
	f.Add([]byte{5, 5})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, edges []byte) {
		g := Graph{}
		node := func(b byte) Node {
			return Node{Kind: []string{"Policy", "ConfigurationPolicy"}[b%2], Name: fmt.Sprint(b % 8)}
		}
		for i := 0; i+1 < len(edges); i += 2 {
			from, to := node(edges[i]), node(edges[i+1])
			g[from] = append(g[from], to)
		}
		for i := byte(0); i < 8; i++ {
			n := node(i)
			cycle := g.CycleThrough(n)
			if reaches(g, n, n) != (cycle != nil) {
				t.Fatalf("node %v: reaches itself %v, cycle %v", n, reaches(g, n, n), cycle)
			}
			if cycle == nil {
				continue
			}
			if cycle[0] != n || cycle[len(cycle)-1] != n {
				t.Fatalf("cycle %v does not start and end at %v", cycle, n)
			}
			for j := 0; j+1 < len(cycle); j++ {
				if !hasEdge(g, cycle[j], cycle[j+1]) {
					t.Fatalf("cycle %v uses a missing edge %v -> %v", cycle, cycle[j], cycle[j+1])
				}
			}
			_ = g.CycleMessage("0", n) // must not panic
		}
	})
}

func hasEdge(g Graph, a, b Node) bool {
	for _, n := range g[a] {
		if n == b {
			return true
		}
	}
	return false
}

// reaches is a plain depth-first search: is there a non-empty path a -> b?
func reaches(g Graph, a, b Node) bool {
	seen := map[Node]bool{}
	var visit func(Node) bool
	visit = func(n Node) bool {
		for _, next := range g[n] {
			if next == b {
				return true
			}
			if !seen[next] {
				seen[next] = true
				if visit(next) {
					return true
				}
			}
		}
		return false
	}
	return visit(a)
}
