package dashboard

import (
	"bytes"
	"fmt"
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

// columns returns each drawn node's column, by key.
func columns(v GraphView) map[string]int {
	out := map[string]int{}
	for _, n := range v.Nodes {
		out[n.Key] = (n.X - margin) / (nodeWidth + columnGap)
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
		want        map[string]int
	}{{
		name: "the fleet: what depends or is depended on, dependencies to the left",
		want: map[string]int{"Policy/p/a": 0, "Policy/p/b": 1, "Policy/p/c/ConfigurationPolicy/c-t": 2, "Policy/p/c": 3},
	}, {
		name: "a policy's page: everything connected to it, templates included", focus: "Policy/p/a",
		want: map[string]int{
			"Policy/p/a/ConfigurationPolicy/a-t": 0, "Policy/p/a": 1, "Policy/p/b/ConfigurationPolicy/b-t": 0,
			"Policy/p/b": 2, "Policy/p/c/ConfigurationPolicy/c-t": 3, "Policy/p/c": 4,
		},
	}, {
		name: "a policy alone", focus: "Policy/p/alone",
		want: map[string]int{"Policy/p/alone/ConfigurationPolicy/alone-t": 0, "Policy/p/alone": 1},
	}, {
		name: "an unknown policy", focus: "Policy/p/missing", want: map[string]int{},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			v := buildGraph(inv, tc.focus)
			g.Expect(columns(v)).To(Equal(tc.want))
			for _, n := range v.Nodes {
				g.Expect(n.Focus).To(Equal(n.Key == tc.focus))
			}
		})
	}
}

func TestBuildGraphEdges(t *testing.T) {
	g := NewWithT(t)
	v := buildGraph(report.Inventory{Policies: []policyv1.Policy{
		policy("a", policyv1.NonCompliant, nil),
		policy("b", policyv1.Pending, []string{"a"}),
	}}, "Policy/p/b")
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
	g.Expect(a.Label).To(Equal("p/a"))
}

// TestBuildGraphCycle checks that a dependency cycle is drawn, not followed
// forever.
func TestBuildGraphCycle(t *testing.T) {
	g := NewWithT(t)
	v := buildGraph(report.Inventory{Policies: []policyv1.Policy{
		policy("a", policyv1.Pending, []string{"b"}),
		policy("b", policyv1.Pending, []string{"a"}),
	}}, "")
	g.Expect(v.Nodes).To(HaveLen(2))
	g.Expect(v.Edges).To(HaveLen(2))
	g.Expect(columns(v)).To(Or(
		Equal(map[string]int{"Policy/p/a": 1, "Policy/p/b": 0}),
		Equal(map[string]int{"Policy/p/a": 0, "Policy/p/b": 1})))
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
	view := newPolicyView(&p, nil, nil, metav1.Now().Time)
	var out bytes.Buffer
	g.Expect(s.pages.ExecuteTemplate(&out, "policy.html", page{Title: "t", API: "/api/policies/p/x", Policy: &view,
		Graph: buildGraph(report.Inventory{Policies: []policyv1.Policy{p}}, "Policy/p/x")})).To(Succeed())
	g.Expect(out.String()).NotTo(ContainSubstring("<script>alert"))
	g.Expect(out.String()).NotTo(ContainSubstring("<img"))
	g.Expect(out.String()).To(ContainSubstring("&lt;script&gt;alert(1)&lt;/script&gt;"))
	g.Expect(out.String()).To(ContainSubstring(`<script src="/static/dashboard.js" defer></script>`), "the one script")
}
