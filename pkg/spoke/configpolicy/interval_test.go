package configpolicy

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

func TestDueForEvaluation(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) string { return now.Add(-d).Format(time.RFC3339) }
	tests := []struct {
		name     string
		interval policyv1.EvaluationInterval
		status   policyv1.ConfigurationPolicyStatus
		want     bool
		wantWait time.Duration
	}{
		{name: "never evaluated", interval: policyv1.EvaluationInterval{Compliant: "never"}, want: true},
		{name: "spec changed", interval: policyv1.EvaluationInterval{Compliant: "never"}, want: true,
			status: policyv1.ConfigurationPolicyStatus{ComplianceState: policyv1.Compliant, LastEvaluated: ago(time.Second), LastEvaluatedGeneration: 1}},
		{name: "watch", want: true,
			status: policyv1.ConfigurationPolicyStatus{ComplianceState: policyv1.Compliant, LastEvaluated: ago(time.Second), LastEvaluatedGeneration: 2}},
		{name: "never once compliant", interval: policyv1.EvaluationInterval{Compliant: "never"},
			status: policyv1.ConfigurationPolicyStatus{ComplianceState: policyv1.Compliant, LastEvaluated: ago(time.Hour), LastEvaluatedGeneration: 2}},
		{name: "never applies to compliant only", interval: policyv1.EvaluationInterval{Compliant: "never"}, want: true,
			status: policyv1.ConfigurationPolicyStatus{ComplianceState: policyv1.NonCompliant, LastEvaluated: ago(time.Hour), LastEvaluatedGeneration: 2}},
		{name: "duration not reached", interval: policyv1.EvaluationInterval{NonCompliant: "10s"}, wantWait: 7 * time.Second,
			status: policyv1.ConfigurationPolicyStatus{ComplianceState: policyv1.NonCompliant, LastEvaluated: ago(3 * time.Second), LastEvaluatedGeneration: 2}},
		{name: "duration reached", interval: policyv1.EvaluationInterval{Compliant: "10s"}, want: true,
			status: policyv1.ConfigurationPolicyStatus{ComplianceState: policyv1.Compliant, LastEvaluated: ago(10 * time.Second), LastEvaluatedGeneration: 2}},
		{name: "unknown compliance", interval: policyv1.EvaluationInterval{Compliant: "never", NonCompliant: "never"}, want: true,
			status: policyv1.ConfigurationPolicyStatus{ComplianceState: policyv1.Terminating, LastEvaluated: ago(time.Second), LastEvaluatedGeneration: 2}},
		{name: "bad interval means watch", interval: policyv1.EvaluationInterval{Compliant: "soon"}, want: true,
			status: policyv1.ConfigurationPolicyStatus{ComplianceState: policyv1.Compliant, LastEvaluated: ago(time.Second), LastEvaluatedGeneration: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			p := &policyv1.ConfigurationPolicy{
				ObjectMeta: metav1.ObjectMeta{Generation: 2},
				Spec:       policyv1.ConfigurationPolicySpec{EvaluationInterval: tt.interval},
				Status:     tt.status,
			}
			due, wait := dueForEvaluation(p, now)
			g.Expect(due).To(Equal(tt.want))
			g.Expect(wait).To(Equal(tt.wantWait))
		})
	}
}

func TestParseInterval(t *testing.T) {
	g := NewWithT(t)
	for in, want := range map[string]interval{
		"": {watch: true}, "watch": {watch: true}, "never": {never: true}, "1h30m": {every: 90 * time.Minute},
	} {
		got, err := parseInterval(in)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(Equal(want), in)
	}
	for _, in := range []string{"0s", "-1s", "daily"} {
		_, err := parseInterval(in)
		g.Expect(err).To(HaveOccurred(), in)
	}
}
