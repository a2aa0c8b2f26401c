package report

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
)

func TestRootExclusions(t *testing.T) {
	set := policyv1beta1.PolicySet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "set"},
		Spec: policyv1beta1.PolicySetSpec{Policies: []policyv1.NonEmptyString{"pol"}, Exclusions: []policyv1beta1.PolicySetExclusion{
			{PolicyName: "pol", Reason: "legacy", ClusterNames: []policyv1.NonEmptyString{"c2", "c3"}},
		}}}
	root := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pol"}}
	root.Status.Placement = []policyv1.Placement{
		{PlacementBinding: "b", PolicySet: "set", Exclusions: []policyv1.PolicyExclusion{{ClusterName: "c3"}, {ClusterName: "c2"}},
			Decisions: []policyv1.PlacementDecision{{ClusterName: "c1"}}},
		{PlacementBinding: "d", Decisions: []policyv1.PlacementDecision{{ClusterName: "c3"}}},
	}
	root.Status.Status = []policyv1.CompliancePerClusterStatus{
		{ClusterName: "c1", ComplianceState: policyv1.Compliant},
		{ClusterName: "c3", ComplianceState: policyv1.NonCompliant, RemainingBindings: []policyv1.RemainingBinding{{PlacementBinding: "d"}}},
	}
	g := NewWithT(t)
	got := RootExclusions(root, []policyv1beta1.PolicySet{set})
	g.Expect(got).To(Equal([]Exclusion{
		{Policy: "pol", Cluster: "c2", PolicySet: "set", Reason: "legacy"},
		{Policy: "pol", Cluster: "c3", PolicySet: "set", Reason: "legacy", RemainingBindings: []string{"d"}},
	}))
	g.Expect(got[1].String()).To(Equal("pol excluded from c3 by PolicySet set, but still placed there by PlacementBinding d: legacy"))
	g.Expect(RootExclusions(root, nil)[0].Reason).To(BeEmpty(), "without the set, no reason")

	m := Build([]policyv1.Policy{*root})
	g.Expect(m.Clusters).To(Equal([]string{"c1", "c2", "c3"}))
	g.Expect(m.Rows[0].Excluded).To(Equal([]string{"c2"}), "c3 is placed by another binding")
	g.Expect(m.Rows[0].Totals()).To(Equal(Totals{Compliant: 1, NonCompliant: 1}), "an excluded cluster counts for nothing")
}
