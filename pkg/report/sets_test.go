package report

import (
	"bytes"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
)

// TestExplainSet names, per cluster, the member that holds a PolicySet
// back there and why, and says which members are missing.
func TestExplainSet(t *testing.T) {
	g := NewWithT(t)
	inv := fleet()
	set := policyv1beta1.PolicySet{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "platform"},
		Spec: policyv1beta1.PolicySetSpec{Policies: []policyv1.NonEmptyString{"operator", "gone"}}}
	set.Status.ComplianceState = policyv1.NonCompliant
	e := ExplainSet(&set, inv)
	g.Expect(e.Set).To(Equal(PolicyRef{Namespace: "ops", Name: "platform"}))
	g.Expect(e.Members).To(HaveLen(2))
	g.Expect(e.Members[0].Compliant).To(Equal(policyv1.NonCompliant))
	g.Expect(e.Members[1].Missing).To(BeTrue())
	g.Expect(e.HeldBack).To(Equal([]HeldBack{{Cluster: "c2", Member: "operator", Compliant: policyv1.NonCompliant,
		Reason: "operator-sub: not yet"}}))

	var out bytes.Buffer
	g.Expect(RenderSetExplanation(&out, e, RenderOptions{})).To(Succeed())
	g.Expect(out.String()).To(Equal(`PolicySet ops/platform: NonCompliant
  member operator: NonCompliant
  member gone: not found

Cluster c2: held back by operator (NonCompliant)
  operator-sub: not yet
`))
}

// TestFirstReason is the one-line reason of a cell: the first unmet
// dependency, else the first message, of the first template that is not
// Compliant.
func TestFirstReason(t *testing.T) {
	g := NewWithT(t)
	g.Expect(FirstReason(ClusterExplanation{NoReplica: true})).To(Equal("no replica on this cluster yet"))
	c := ClusterExplanation{Templates: []TemplateExplanation{
		{Name: "ok", Compliant: policyv1.Compliant, Message: "fine"},
		{Name: "cfg", Compliant: policyv1.Pending, Unmet: []UnmetDependency{
			{ObjectRef: ObjectRef{Kind: "Policy", Name: "policies.a", Policy: &PolicyRef{Namespace: "policies", Name: "a"}}, Reason: "not found"}}},
	}}
	g.Expect(FirstReason(c)).To(Equal("cfg: waiting for Policy policies/a: not found"))
	c.Templates[1] = TemplateExplanation{Name: "cfg", Compliant: policyv1.NonCompliant, Message: "configmaps [x] not found"}
	g.Expect(FirstReason(c)).To(Equal("cfg: configmaps [x] not found"))
}
