package compliance

import (
	"testing"

	. "github.com/onsi/gomega"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

func TestAggregate(t *testing.T) {
	const (
		compliant    = policyv1.Compliant
		nonCompliant = policyv1.NonCompliant
		pending      = policyv1.Pending
		unknown      = policyv1.ComplianceState("")
	)
	for _, tc := range []struct {
		in   []policyv1.ComplianceState
		want policyv1.ComplianceState
	}{
		{nil, unknown},
		{[]policyv1.ComplianceState{}, unknown},
		{[]policyv1.ComplianceState{compliant}, compliant},
		{[]policyv1.ComplianceState{compliant, compliant}, compliant},
		{[]policyv1.ComplianceState{compliant, unknown}, unknown},
		{[]policyv1.ComplianceState{unknown, pending, compliant}, pending},
		{[]policyv1.ComplianceState{pending, nonCompliant, unknown}, nonCompliant},
		{[]policyv1.ComplianceState{compliant, "Terminating"}, unknown},
		{[]policyv1.ComplianceState{"Terminating"}, unknown},
		{[]policyv1.ComplianceState{compliant, pending, nonCompliant}, nonCompliant},
		{[]policyv1.ComplianceState{compliant, pending}, pending},
		{[]policyv1.ComplianceState{pending, unknown}, pending},
	} {
		NewWithT(t).Expect(Aggregate(tc.in...)).To(Equal(tc.want), "%v", tc.in)
	}
}

func TestKnown(t *testing.T) {
	g := NewWithT(t)
	for _, s := range []policyv1.ComplianceState{policyv1.Compliant, policyv1.NonCompliant, policyv1.Pending} {
		g.Expect(Known(s)).To(Equal(s))
	}
	g.Expect(Known("Terminating")).To(BeEmpty())
	g.Expect(Known("")).To(BeEmpty())
}
