package vet

import (
	"os"
	"testing"

	. "github.com/onsi/gomega"
)

// TestPublicPolicyUnknownFields checks sample-network-policy-99 of the
// policy-collection: each field of its last template that the
// ConfigurationPolicy schema does not know is an error at its own line,
// saying what the agent does with it, and nothing else is reported.
func TestPublicPolicyUnknownFields(t *testing.T) {
	g := NewWithT(t)
	checker, err := New(Options{})
	g.Expect(err).NotTo(HaveOccurred())
	const file = "testdata/policy-collection/sample-network-policy-99.yaml"
	data, err := os.ReadFile(file)
	g.Expect(err).NotTo(HaveOccurred())
	docs, findings := Parse(file, data)
	g.Expect(findings).To(BeEmpty())
	var got []string
	for _, f := range checker.Check(t.Context(), docs) {
		got = append(got, f.String())
	}
	const detail = "unknown field: refused under strict field validation (how the agent writes policy templates, as OCM does, and kubectl's default), dropped otherwise"
	const where = "error: [schema] Policy sample-network-policy-99 policy-templates[3]: ConfigurationPolicy allow-pod-and-namespace-both: "
	g.Expect(got).To(Equal([]string{
		file + ":116: " + where + "spec.object-templates[0].severity: Forbidden: " + detail,
		file + ":117: " + where + "spec.object-templates[0].remediationAction: Forbidden: " + detail,
	}))
}
