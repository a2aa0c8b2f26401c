package dashboard

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/report"
)

// policy returns a root policy in namespace p with one ConfigurationPolicy
// template (extra dependencies extra) that depends on the policies deps.
func policy(name string, state policyv1.ComplianceState, deps []string, extra ...string) policyv1.Policy {
	p := policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: "p", Name: name}}
	p.Status.ComplianceState = state
	def := fmt.Sprintf(`{"kind":"ConfigurationPolicy","metadata":{"name":%q}}`, name+"-t")
	t := policyv1.PolicyTemplate{ObjectDefinition: runtime.RawExtension{Raw: []byte(def)}}
	for _, d := range extra {
		t.ExtraDependencies = append(t.ExtraDependencies, dependency(d))
	}
	p.Spec.PolicyTemplates = []policyv1.PolicyTemplate{t}
	for _, d := range deps {
		p.Spec.Dependencies = append(p.Spec.Dependencies, dependency(d))
	}
	return p
}

func dependency(name string) policyv1.PolicyDependency {
	return policyv1.PolicyDependency{TypeMeta: metav1.TypeMeta{Kind: policyv1.PolicyKind}, Name: name, Compliance: policyv1.Compliant}
}

// leftOf reports, by edge "to -> from" (what is waited for, then its
// dependant), whether the first box is drawn wholly left of the second.
func leftOf(v GraphView) map[string]bool {
	boxes := map[string]GraphNode{}
	for _, n := range v.Nodes {
		boxes[n.Key] = n
	}
	out := map[string]bool{}
	for _, e := range v.Edges {
		out[e.To+" -> "+e.From] = boxes[e.To].X+boxes[e.To].W <= boxes[e.From].X
	}
	return out
}

func TestBuildGraph(t *testing.T) {
	inv := report.Inventory{Policies: []policyv1.Policy{
		policy("a", policyv1.Compliant, nil),
		policy("b", policyv1.Pending, []string{"a"}),
		policy("c", policyv1.NonCompliant, nil, "b"),
		policy("alone", policyv1.Compliant, nil),
	}}
	for _, tc := range []struct {
		name, focus string
		want        []string
	}{{
		name: "the fleet: what depends or is depended on",
		want: []string{"Policy/p/a -> Policy/p/b", "Policy/p/b -> Policy/p/c/ConfigurationPolicy/c-t",
			"Policy/p/c/ConfigurationPolicy/c-t -> Policy/p/c"},
	}, {
		name: "a policy's page: everything connected to it, templates included", focus: "Policy/p/a",
		want: []string{"Policy/p/a -> Policy/p/b", "Policy/p/b -> Policy/p/c/ConfigurationPolicy/c-t",
			"Policy/p/c/ConfigurationPolicy/c-t -> Policy/p/c", "Policy/p/a/ConfigurationPolicy/a-t -> Policy/p/a",
			"Policy/p/b/ConfigurationPolicy/b-t -> Policy/p/b"},
	}, {
		name: "a policy alone", focus: "Policy/p/alone",
		want: []string{"Policy/p/alone/ConfigurationPolicy/alone-t -> Policy/p/alone"},
	}, {
		name: "an unknown policy", focus: "Policy/p/missing",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			v, err := buildGraph(t.Context(), inv, tc.focus)
			g.Expect(err).NotTo(HaveOccurred())
			left := leftOf(v)
			g.Expect(slices.Collect(maps.Keys(left))).To(ConsistOf(tc.want))
			for edge, ok := range left {
				g.Expect(ok).To(BeTrue(), "%s: a dependency left of its dependant", edge)
			}
			for _, n := range v.Nodes {
				g.Expect(n.Focus).To(Equal(n.Key == tc.focus))
			}
			expectRouted(g, v)
		})
	}
}

func TestBuildGraphEdges(t *testing.T) {
	g := NewWithT(t)
	v, err := buildGraph(t.Context(), report.Inventory{Policies: []policyv1.Policy{
		policy("a", policyv1.NonCompliant, nil),
		policy("b", policyv1.Pending, []string{"a"}),
	}}, "Policy/p/b")
	g.Expect(err).NotTo(HaveOccurred())
	var met, unmet, structural int
	for _, e := range v.Edges {
		switch {
		case e.Structural:
			structural++
		case e.Met:
			met++
		default:
			unmet++
			g.Expect(e.Label).To(Equal("Compliant"))
		}
	}
	g.Expect([]int{met, unmet, structural}).To(Equal([]int{0, 1, 2}))
	a := v.Nodes[0]
	g.Expect(a.Key).To(Equal("Policy/p/a"))
	g.Expect(a.Href).To(Equal("/policies/p/a"))
	g.Expect(a.Label).To(Equal("Policy p/a"))
}

// TestBuildGraphCycle checks that a dependency cycle is drawn, not followed
// forever.
func TestBuildGraphCycle(t *testing.T) {
	g := NewWithT(t)
	v, err := buildGraph(t.Context(), report.Inventory{Policies: []policyv1.Policy{
		policy("a", policyv1.Pending, []string{"b"}),
		policy("b", policyv1.Pending, []string{"a"}),
	}}, "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(v.Nodes).To(HaveLen(2))
	g.Expect(v.Edges).To(HaveLen(2))
	expectRouted(g, v)
}

// TestPagesEscape renders a policy page whose names carry markup: it comes
// out as text.
func TestPagesEscape(t *testing.T) {
	g := NewWithT(t)
	s := &Server{}
	_, err := s.Handler()
	g.Expect(err).NotTo(HaveOccurred())
	p := policy("x", policyv1.Pending, nil)
	p.Spec.PolicyTemplates[0].ObjectDefinition.Raw = []byte(`{"kind":"<script>alert(1)</script>","metadata":{"name":"<img src=x onerror=alert(1)>"}}`)
	view := newPolicyView(&p, nil, report.Inventory{}, metav1.Now().Time)
	graph, err := buildGraph(t.Context(), report.Inventory{Policies: []policyv1.Policy{p}}, "Policy/p/x")
	g.Expect(err).NotTo(HaveOccurred())
	var out bytes.Buffer
	g.Expect(s.pages.ExecuteTemplate(&out, "policy.html", page{Title: "t", API: "/api/policies/p/x", Policy: &view,
		Graph: graph})).To(Succeed())
	g.Expect(out.String()).NotTo(ContainSubstring("<script>alert"))
	g.Expect(out.String()).NotTo(ContainSubstring("<img"))
	g.Expect(out.String()).To(ContainSubstring("&lt;script&gt;alert(1)&lt;/script&gt;"))
	g.Expect(out.String()).To(ContainSubstring(`<script src="/static/dashboard.js" defer></script>`), "the one script")
}
