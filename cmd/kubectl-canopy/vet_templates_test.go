package main

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/canopy-policy/canopy/pkg/vet"
)

// TestVetTemplates runs vet on templated policies: OCM policies with hub
// and managed templates pass; broken templates fail with their file and
// line; what Canopy does not support is a warning, which does not fail.
func TestVetTemplates(t *testing.T) {
	g := NewWithT(t)
	out, err := canopy(t, "vet", "testdata/vet-templates/good")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(Equal("2 documents checked, no problems found\n"))

	out, err = canopy(t, "vet", "testdata/vet-templates/bad")
	g.Expect(err).To(MatchError(errVetFailed))
	expectGolden(t, "vet-templates/bad", out)

	out, err = canopy(t, "vet", "testdata/vet-templates/warn")
	g.Expect(err).NotTo(HaveOccurred(), "warnings do not fail vet")
	expectGolden(t, "vet-templates/warn", out)
}

// TestVetTemplatesDenylist runs vet on the good policies with the hub's
// and the agents' deny-list: each call of a denied function is a warning
// at its line, in hub and managed templates alike, and warnings do not
// fail vet.
func TestVetTemplatesDenylist(t *testing.T) {
	g := NewWithT(t)
	out, err := canopy(t, "vet", "--template-function-denylist", "fromSecret,lookup",
		"--template-function-denylist=fromClusterClaim", "testdata/vet-templates/good")
	g.Expect(err).NotTo(HaveOccurred(), "warnings do not fail vet")
	expectGolden(t, "vet-templates/denylist", out)
}

func TestVetTemplatesJSON(t *testing.T) {
	g := NewWithT(t)
	out, err := canopy(t, "vet", "-o", "json", "testdata/vet-templates/bad", "testdata/vet-templates/warn")
	g.Expect(err).To(MatchError(errVetFailed))
	var findings []vet.Finding
	g.Expect(json.Unmarshal([]byte(out), &findings)).To(Succeed())
	checks := map[string]bool{}
	for _, f := range findings {
		g.Expect(f.File).To(HavePrefix("testdata/vet-templates/"))
		g.Expect(f.Line).To(BeNumerically(">", 0))
		checks[f.Check] = true
	}
	g.Expect(checks).To(Equal(map[string]bool{vet.CheckTemplate: true, vet.CheckName: true, vet.CheckUnsupported: true}))
	g.Expect(findings).To(ContainElement(vet.Finding{
		File: "testdata/vet-templates/bad/managed-templates.yaml", Line: 19, Severity: vet.SeverityError,
		Check: vet.CheckTemplate, Object: "ConfigurationPolicy cluster1/team-quotas",
		Message: `object-templates-raw template: unexpected "}" in operand`,
	}), "a syntax error on the 11th line of a block scalar is reported at its line in the file")
}
