package dashboard

import (
	"bytes"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/pkg/replica"
	"github.com/canopy-policy/canopy/pkg/report"
)

// replicaOf is root's replica on cluster, its one template in state.
func replicaOf(root policyv1.Policy, cluster string, state policyv1.ComplianceState, msg string) policyv1.Policy {
	r := policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: replica.Name(&root),
		Labels: map[string]string{policyv1.RootPolicyLabel: replica.Name(&root)}}}
	r.Status.ComplianceState = state
	r.Status.Details = []policyv1.DetailsPerTemplate{{ComplianceState: state,
		TemplateMeta: metav1.ObjectMeta{Name: root.Name + "-t"},
		History:      []policyv1.ComplianceHistory{{Message: string(state) + "; " + msg}}}}
	return r
}

// TestViewsAgree renders one fleet state through every view — the
// dashboard's graph and its cells' reasons, kubectl canopy deps (tree and
// JSON model) and explain — and checks that they say the same of every
// node and every dependency edge.
func TestViewsAgree(t *testing.T) {
	g := NewWithT(t)
	a := policy("a", policyv1.Compliant, nil)
	b := policy("b", policyv1.NonCompliant, []string{"a"})
	c := policy("c", policyv1.Pending, []string{"b", "gone"}, "a")
	c.Status.Status = []policyv1.CompliancePerClusterStatus{{ClusterName: "c1", ClusterNamespace: "c1", ComplianceState: policyv1.Pending}}
	set := policyv1beta1.PolicySet{ObjectMeta: metav1.ObjectMeta{Namespace: "p", Name: "s"},
		Spec: policyv1beta1.PolicySetSpec{Policies: []policyv1.NonEmptyString{"a", "b"}}}
	set.Status.ComplianceState = policyv1.NonCompliant
	inv := report.Inventory{Policies: []policyv1.Policy{a, b, c,
		replicaOf(a, "c1", policyv1.Compliant, "ok"), replicaOf(b, "c1", policyv1.NonCompliant, "configmaps [x] not found"),
		replicaOf(c, "c1", policyv1.Pending, "Dependencies were not satisfied: 1 is still pending (Policy p.b)")},
		PolicySets: []policyv1beta1.PolicySet{set}}

	dashboard := graphState(inv, "")
	nodes := map[string]NodeState{}
	for _, n := range dashboard.Nodes {
		nodes[n.ID] = n
	}
	edges := map[[2]string]EdgeState{}
	for _, e := range dashboard.Edges {
		edges[[2]string{e.From, e.To}] = e
	}
	for _, root := range []report.PolicyRef{{Namespace: "p", Name: "a"}, {Namespace: "p", Name: "b"}, {Namespace: "p", Name: "c"}, {Namespace: "p", Name: "s"}} {
		model, err := report.BuildGraph(root, inv)
		g.Expect(err).NotTo(HaveOccurred())
		var tree bytes.Buffer
		g.Expect(report.RenderTree(&tree, model, report.RenderOptions{})).To(Succeed())
		for _, n := range model.Nodes {
			if d, drawn := nodes[n.ID]; drawn {
				g.Expect(d.Compliant).To(Equal(n.State), "node %s: the dashboard and deps disagree", n.ID)
				g.Expect(d.Reason).To(Equal(n.Reason), "node %s", n.ID)
			}
			if n.State != "" {
				g.Expect(tree.String()).To(ContainSubstring(n.Label()+"  ["+string(n.State)+"]"), "the tree shows %s's state", n.ID)
			}
		}
		for _, e := range model.Edges {
			if d, drawn := edges[[2]string{e.From, e.To}]; drawn && e.Compliance != "" {
				g.Expect(d.Met).To(Equal(e.Met), "edge %s -> %s: the dashboard and deps disagree", e.From, e.To)
			}
		}
	}
	g.Expect(edges[[2]string{"Policy/p/b", "Policy/p/a"}].Met).To(BeTrue(), "a is Compliant, as b wants")
	g.Expect(edges[[2]string{"Policy/p/c", "Policy/p/b"}].Met).To(BeFalse(), "b is NonCompliant")
	g.Expect(edges[[2]string{"Policy/p/c/ConfigurationPolicy/c-t", "Policy/p/a"}].Met).To(BeTrue(), "an extra dependency, met")
	g.Expect(nodes["Policy/p/c/ConfigurationPolicy/c-t"].Compliant).To(Equal(policyv1.Pending), "a template's state from its replicas")
	g.Expect(nodes["Policy/p/gone"].Reason).To(Equal("not found"))

	// The overview's cell reason is explain's first reason there.
	e := report.Explain(&c, []policyv1.Policy{inv.Policies[5]}, report.ExplainOptions{})
	g.Expect(reasonsOf(inv).of(report.PolicyRef{Namespace: "p", Name: "c"}, "c1", policyv1.Pending)).
		To(Equal(report.FirstReason(e.Clusters[0])))
	g.Expect(strings.HasPrefix(report.FirstReason(e.Clusters[0]), "c-t: waiting for Policy p/b")).To(BeTrue(), report.FirstReason(e.Clusters[0]))
}
