package report

import (
	"bytes"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
)

func dep(kind, namespace, name string, want policyv1.ComplianceState) policyv1.PolicyDependency {
	d := policyv1.PolicyDependency{Name: name, Namespace: namespace, Compliance: want}
	d.Kind = kind
	if kind == "Namespace" {
		d.APIVersion = "v1"
	}
	return d
}

// fleet is an inventory with dependencies across namespaces, a PolicySet,
// a template dependency and a cycle.
func fleet() Inventory {
	app := root("policies", "app", policyv1.Pending)
	app.Spec.Dependencies = []policyv1.PolicyDependency{dep("Policy", "ops", "operator", policyv1.Compliant)}
	app.Spec.PolicyTemplates = []policyv1.PolicyTemplate{template("ConfigurationPolicy", "app-config",
		dep("PolicySet", "", "base", policyv1.Compliant),
		dep("ConfigurationPolicy", "", "operator-sub", policyv1.Compliant),
		dep("Namespace", "", "prod", policyv1.Compliant))}
	operator := root("ops", "operator", policyv1.NonCompliant)
	operator.Spec.PolicyTemplates = []policyv1.PolicyTemplate{template("ConfigurationPolicy", "operator-sub")}
	operator.Spec.Dependencies = []policyv1.PolicyDependency{dep("Policy", "", "policies.app", policyv1.Pending)}
	x := root("policies", "x", policyv1.Compliant)
	set := policyv1beta1.PolicySet{ObjectMeta: metav1.ObjectMeta{Namespace: "policies", Name: "base"},
		Spec: policyv1beta1.PolicySetSpec{Policies: []policyv1.NonEmptyString{"x", "missing"}}}
	set.Status.ComplianceState = policyv1.Pending
	return Inventory{
		Policies: []policyv1.Policy{x, operator, app,
			replicaOf(&operator, "c1", policyv1.Compliant, details("operator-sub", "Compliant; ok")),
			replicaOf(&operator, "c2", policyv1.NonCompliant, details("operator-sub", "NonCompliant; not yet")),
		},
		PolicySets: []policyv1beta1.PolicySet{set},
	}
}

func TestBuildGraph(t *testing.T) {
	g := NewWithT(t)
	graph, err := BuildGraph(PolicyRef{Namespace: "policies", Name: "app"}, fleet())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(graph.Root).To(Equal("Policy/policies/app"))
	ids := map[string]GraphNode{}
	for _, n := range graph.Nodes {
		g.Expect(ids).NotTo(HaveKey(n.ID), "each node once")
		ids[n.ID] = n
	}
	g.Expect(ids).To(HaveKey("Policy/ops/operator"))
	g.Expect(ids["Policy/ops/operator/ConfigurationPolicy/operator-sub"].State).To(Equal(policyv1.NonCompliant), "worst over the clusters")
	g.Expect(ids["PolicySet/policies/base"].State).To(Equal(policyv1.Pending))
	g.Expect(ids["Policy/policies/missing"].Missing).To(BeTrue())
	g.Expect(ids["Namespace//prod"].Kind).To(Equal("Namespace"))
	g.Expect(graph.Edges).To(ContainElements(
		GraphEdge{From: "Policy/policies/app", To: "Policy/ops/operator", Relation: RelationDependency, Compliance: policyv1.Compliant,
			Reason: "want Compliant got NonCompliant"},
		GraphEdge{From: "Policy/policies/app/ConfigurationPolicy/app-config", To: "Policy/ops/operator/ConfigurationPolicy/operator-sub",
			Relation: RelationExtraDependency, Compliance: policyv1.Compliant, Reason: "want Compliant got NonCompliant"},
		GraphEdge{From: "Policy/policies/app/ConfigurationPolicy/app-config", To: "Namespace//prod",
			Relation: RelationExtraDependency, Compliance: policyv1.Compliant, Reason: "judged on each managed cluster"},
		GraphEdge{From: "PolicySet/policies/base", To: "Policy/policies/x", Relation: RelationMember},
		GraphEdge{From: "Policy/ops/operator", To: "Policy/policies/app", Relation: RelationDependency, Compliance: policyv1.Pending, Met: true},
	))
	g.Expect(ids["Policy/policies/missing"].Reason).To(Equal("not found"))
	g.Expect(ids["Policy/ops/operator"].Reason).To(Equal("c2: operator-sub: not yet"), "its first cluster that is not Compliant")

	// A PolicySet is a root too (kubectl canopy deps <set>).
	set, err := BuildGraph(PolicyRef{Namespace: "policies", Name: "base"}, fleet())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(set.Root).To(Equal("PolicySet/policies/base"))
	g.Expect(set.Nodes).To(HaveLen(3))

	_, err = BuildGraph(PolicyRef{Namespace: "policies", Name: "nope"}, fleet())
	g.Expect(err).To(MatchError(ErrPolicyNotFound))
}

func TestRenderTree(t *testing.T) {
	g := NewWithT(t)
	graph, err := BuildGraph(PolicyRef{Namespace: "policies", Name: "app"}, fleet())
	g.Expect(err).NotTo(HaveOccurred())
	var out bytes.Buffer
	g.Expect(RenderTree(&out, graph, RenderOptions{})).To(Succeed())
	g.Expect(out.String()).To(Equal(`Policy policies/app  [Pending]
├── needs Compliant: Policy ops/operator  [NonCompliant]
│   ├── needs Pending: Policy policies/app  [Pending]  (cycle)
│   └── template ConfigurationPolicy operator-sub  [NonCompliant]
└── template ConfigurationPolicy app-config  [-]
    ├── extra needs Compliant: PolicySet policies/base  [Pending]
    │   ├── member Policy policies/x  [Compliant]
    │   └── member Policy policies/missing  [not found]
    ├── extra needs Compliant: ConfigurationPolicy operator-sub  [NonCompliant]
    └── extra needs Compliant: Namespace prod
`))
}

func TestRenderDOT(t *testing.T) {
	g := NewWithT(t)
	graph, err := BuildGraph(PolicyRef{Namespace: "policies", Name: "x"}, fleet())
	g.Expect(err).NotTo(HaveOccurred())
	var out bytes.Buffer
	g.Expect(RenderDOT(&out, graph)).To(Succeed())
	g.Expect(out.String()).To(Equal(`digraph canopy {
  rankdir=LR;
  node [shape=box, style="rounded,filled", fillcolor=white];
  "Policy/policies/x" [label="Policy policies/x\nCompliant", fillcolor=palegreen, penwidth=2];
}
`))

	graph, err = BuildGraph(PolicyRef{Namespace: "ops", Name: "operator"}, fleet())
	g.Expect(err).NotTo(HaveOccurred())
	out.Reset()
	g.Expect(RenderDOT(&out, graph)).To(Succeed())
	g.Expect(out.String()).To(ContainSubstring(`"Policy/ops/operator" -> "Policy/policies/app" [label="Pending"];`))
	g.Expect(out.String()).To(ContainSubstring(`"Policy/ops/operator" -> "Policy/ops/operator/ConfigurationPolicy/operator-sub" [style=dashed, label="template"];`))
	g.Expect(out.String()).To(ContainSubstring(`[label="template ConfigurationPolicy operator-sub\nNonCompliant", fillcolor=lightcoral];`))
}

// TestRenderTreeDiamond prints a node reached twice once with its children.
func TestRenderTreeDiamond(t *testing.T) {
	g := NewWithT(t)
	p := root("ns", "p", "")
	p.Spec.Dependencies = []policyv1.PolicyDependency{dep("Policy", "", "q", policyv1.Compliant), dep("Policy", "", "r", policyv1.Compliant)}
	q, r := root("ns", "q", ""), root("ns", "r", "")
	q.Spec.Dependencies = []policyv1.PolicyDependency{dep("Policy", "", "s", policyv1.Compliant)}
	r.Spec.Dependencies = q.Spec.Dependencies
	s := root("ns", "s", policyv1.Compliant)
	s.Spec.PolicyTemplates = []policyv1.PolicyTemplate{template("ConfigurationPolicy", "s")}
	graph, err := BuildGraph(PolicyRef{Namespace: "ns", Name: "p"}, Inventory{Policies: []policyv1.Policy{p, q, r, s}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(graph.Nodes).To(HaveLen(5))
	var out bytes.Buffer
	g.Expect(RenderTree(&out, graph, RenderOptions{})).To(Succeed())
	g.Expect(out.String()).To(Equal(`Policy ns/p  [-]
├── needs Compliant: Policy ns/q  [-]
│   └── needs Compliant: Policy ns/s  [Compliant]
│       └── template ConfigurationPolicy s  [-]
└── needs Compliant: Policy ns/r  [-]
    └── needs Compliant: Policy ns/s  [Compliant]  (see above)
`))
}
