package dashboard

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/pkg/report"
)

// charWidth is the advance of one character of the monospace font the
// graph's labels are drawn in, per unit of font size (0.6 for Courier,
// 0.602 for DejaVu Sans Mono).
const charWidth = 0.61

// bezier samples the cubic Bézier path d (as splinePath writes it).
func bezier(g Gomega, d string) [][2]float64 {
	f := strings.Fields(strings.NewReplacer(",", " ", "M", " ", "C", " ").Replace(d))
	var p []float64
	for _, s := range f {
		v, err := strconv.ParseFloat(s, 64)
		g.Expect(err).NotTo(HaveOccurred(), d)
		p = append(p, v)
	}
	g.Expect((len(p)-2)%6).To(BeZero(), d)
	var out [][2]float64
	for i := 0; i+8 <= len(p); i += 6 {
		for s := 0; s <= 50; s++ {
			t := float64(s) / 50
			a, b, c, e := (1-t)*(1-t)*(1-t), 3*(1-t)*(1-t)*t, 3*(1-t)*t*t, t*t*t
			out = append(out, [2]float64{a*p[i] + b*p[i+2] + c*p[i+4] + e*p[i+6], a*p[i+1] + b*p[i+3] + c*p[i+5] + e*p[i+7]})
		}
	}
	return out
}

func inside(n GraphNode, x, y, slack float64) bool {
	return x > n.X+slack && x < n.X+n.W-slack && y > n.Y+slack && y < n.Y+n.H-slack
}

func overlap(a, b box) bool {
	return a.X < b.X+b.W && b.X < a.X+a.W && a.Y < b.Y+b.H && b.Y < a.Y+a.H
}

// expectRouted checks that v is drawn legibly: no box overlaps another,
// each box holds its full label, each edge runs from the border of its
// first box to the border of its second without passing through any
// other, and no edge label lies on a box.
func expectRouted(g Gomega, v GraphView) {
	nodes := map[string]GraphNode{}
	for _, n := range v.Nodes {
		nodes[n.Key] = n
		g.Expect(n.W).To(BeNumerically(">=", float64(utf8.RuneCountInString(n.Label))*fontSize*charWidth+8),
			"%s: the box holds its label", n.Label)
		g.Expect(n.Label).NotTo(ContainSubstring("…"))
		g.Expect(n.X).To(BeNumerically(">=", 0))
		g.Expect(n.Y).To(BeNumerically(">=", 0))
		g.Expect(n.X + n.W).To(BeNumerically("<=", v.Width))
		g.Expect(n.Y + n.H).To(BeNumerically("<=", v.Height))
		for _, m := range v.Nodes {
			if m.Key != n.Key {
				g.Expect(overlap(box{n.X, n.Y, n.W, n.H}, box{m.X, m.Y, m.W, m.H})).To(BeFalse(), "%s on %s", n.Key, m.Key)
			}
		}
	}
	for _, e := range v.Edges {
		points := bezier(g, e.Path)
		from, to := nodes[e.To], nodes[e.From] // drawn from what is waited for to its dependant
		first, last := points[0], points[len(points)-1]
		g.Expect(inside(from, first[0], first[1], -2) && !inside(from, first[0], first[1], 2)).To(BeTrue(),
			"%s -> %s starts on the border of %s", e.From, e.To, e.To)
		g.Expect(inside(to, last[0], last[1], -2) && !inside(to, last[0], last[1], 2)).To(BeTrue(),
			"%s -> %s ends on the border of %s", e.From, e.To, e.From)
		for _, n := range v.Nodes {
			for _, p := range points {
				if n.Key != e.From && n.Key != e.To {
					g.Expect(inside(n, p[0], p[1], 0)).To(BeFalse(), "%s -> %s crosses %s at %v", e.From, e.To, n.Key, p)
				}
			}
			if e.Label != "" {
				w := float64(len(e.Label)) * edgeFontSize * charWidth
				label := box{e.LabelX - w/2, e.LabelY - edgeFontSize/2, w, edgeFontSize}
				g.Expect(overlap(label, box{n.X, n.Y, n.W, n.H})).To(BeFalse(), "label of %s -> %s on %s", e.From, e.To, n.Key)
			}
		}
	}
}

// orderedInstall is examples/ordered-install: three templates, each but
// the first waiting for the one before.
func orderedInstall(state policyv1.ComplianceState) policyv1.Policy {
	p := policy("ordered-install", state, nil)
	p.Spec.PolicyTemplates = nil
	prev := ""
	for _, name := range []string{"widget-crd", "widget-instance", "widget-check"} {
		def := fmt.Sprintf(`{"kind":"ConfigurationPolicy","metadata":{"name":%q}}`, name)
		t := policyv1.PolicyTemplate{ObjectDefinition: runtime.RawExtension{Raw: []byte(def)}}
		if prev != "" {
			t.ExtraDependencies = []policyv1.PolicyDependency{{TypeMeta: metav1.TypeMeta{Kind: "ConfigurationPolicy"},
				Name: prev, Compliance: policyv1.Compliant}}
		}
		p.Spec.PolicyTemplates = append(p.Spec.PolicyTemplates, t)
		prev = name
	}
	return p
}

// busyFleet is a fleet whose graph is dense enough to tempt a layout into
// drawing lines through boxes: chains, fan-in, fan-out, a set, a cycle,
// long names.
func busyFleet() report.Inventory {
	long := "a-policy-with-a-name-long-enough-to-be-cut-by-a-fixed-box"
	return report.Inventory{Policies: []policyv1.Policy{
		orderedInstall(policyv1.Compliant),
		policy("base", policyv1.Compliant, nil),
		policy("operators", policyv1.Compliant, []string{"base"}),
		policy("issuer", policyv1.Pending, []string{"operators", "base"}, "ordered-install"),
		policy(long, policyv1.NonCompliant, []string{"issuer", "operators"}),
		policy("audit", policyv1.Pending, []string{"base", long, "ordered-install"}),
		policy("x", policyv1.Pending, []string{"y"}),
		policy("y", policyv1.Pending, []string{"x", "base"}),
	}, PolicySets: []policyv1beta1.PolicySet{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "p", Name: "platform"},
		Spec:       policyv1beta1.PolicySetSpec{Policies: []policyv1.NonEmptyString{"base", "operators", "issuer"}},
	}}}
}

// TestLayoutAvoidsBoxes lays out the ordered-install policy and a busy
// fleet, on the overview and on a policy's page, and checks that every
// label is whole and no edge passes through a box other than its ends.
func TestLayoutAvoidsBoxes(t *testing.T) {
	busy := busyFleet()
	busy.Policies = append(busy.Policies, policy("on-set", policyv1.Pending, nil))
	busy.Policies[len(busy.Policies)-1].Spec.Dependencies = []policyv1.PolicyDependency{{
		TypeMeta: metav1.TypeMeta{Kind: policyv1beta1.PolicySetKind}, Name: "platform", Compliance: policyv1.Compliant}}
	for _, tc := range []struct {
		name  string
		inv   report.Inventory
		focus string
	}{
		{"ordered-install", report.Inventory{Policies: []policyv1.Policy{orderedInstall(policyv1.Compliant)}}, "Policy/p/ordered-install"},
		{"busy fleet overview", busy, ""},
		{"busy fleet, a policy's page", busy, "Policy/p/issuer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			v, err := buildGraph(t.Context(), tc.inv, tc.focus)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(v.Nodes).NotTo(BeEmpty())
			expectRouted(g, v)
		})
	}
	t.Run("ordered-install labels", func(t *testing.T) {
		g := NewWithT(t)
		v, err := buildGraph(t.Context(), report.Inventory{Policies: []policyv1.Policy{orderedInstall(policyv1.Compliant)}},
			"Policy/p/ordered-install")
		g.Expect(err).NotTo(HaveOccurred())
		var labels []string
		for _, n := range v.Nodes {
			labels = append(labels, n.Label)
		}
		g.Expect(labels).To(ConsistOf("Policy p/ordered-install", "ConfigurationPolicy widget-crd",
			"ConfigurationPolicy widget-instance", "ConfigurationPolicy widget-check"))
	})
}

// TestLayoutConcurrent lays out graphs from many requests at once: the one
// Graphviz instance serves them in turn.
func TestLayoutConcurrent(t *testing.T) {
	g := NewWithT(t)
	inv := busyFleet()
	want, err := buildGraph(t.Context(), inv, "")
	g.Expect(err).NotTo(HaveOccurred())
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			got, err := buildGraph(t.Context(), inv, "")
			if err == nil && fmt.Sprint(got) != fmt.Sprint(want) {
				err = fmt.Errorf("a concurrent layout differs")
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		g.Expect(err).NotTo(HaveOccurred())
	}
}

// TestExpectRoutedCatchesFaults checks the checker: a line through a
// third box, a cut label, and overlapping boxes are each caught.
func TestExpectRoutedCatchesFaults(t *testing.T) {
	ok := func() GraphView {
		return GraphView{Width: 600, Height: 100, Nodes: []GraphNode{
			{Key: "a", Label: "Policy p/a", X: 10, Y: 10, W: 100, H: 30},
			{Key: "b", Label: "Policy p/b", X: 200, Y: 10, W: 100, H: 30},
			{Key: "c", Label: "Policy p/c", X: 400, Y: 10, W: 100, H: 30},
		}, Edges: []GraphEdge{{From: "b", To: "a", Path: "M 110 25 C 140 25, 170 25, 200 25"}}}
	}
	through, cut, overlapping := ok(), ok(), ok()
	through.Edges[0] = GraphEdge{From: "c", To: "a", Path: "M 110 25 C 200 25, 300 25, 400 25"}
	cut.Nodes[0].Label = "ConfigurationPolicy widget-instance"
	overlapping.Nodes[1].X = 50
	failures := func(v GraphView) []string {
		var out []string
		expectRouted(NewGomega(func(msg string, _ ...int) { out = append(out, msg) }), v)
		return out
	}
	for name, v := range map[string]GraphView{"through a box": through, "a cut label": cut, "overlapping": overlapping} {
		NewWithT(t).Expect(failures(v)).NotTo(BeEmpty(), name)
	}
	NewWithT(t).Expect(failures(ok())).To(BeEmpty())
}
