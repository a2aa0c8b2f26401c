package configpolicy

import (
	"testing"

	. "github.com/onsi/gomega"
)

// TestTemplateDeniedFunction evaluates templates that call a function the
// agent's --template-function-denylist names (the suite's Reconciler denies
// deniedFunction): in object-templates and in object-templates-raw, the
// policy is NonCompliant with the library's ErrDenylistedFunctionUsed
// message, as OCM's config-policy-controller reports it
// (test/e2e/case13_templatization_test.go: "error calling env: use of
// denylisted template function: ..."; the text of a function the list
// names is go-template-utils pkg/templates/templates.go's "function '%s'
// is not allowed"), and nothing is created.
func TestTemplateDeniedFunction(t *testing.T) {
	const denied = "error calling " + deniedFunction + ": use of denylisted template function: function '" +
		deniedFunction + "' is not allowed"
	f := newFixture(t)
	f.policy(`
metadata: {name: denied}
spec:
  remediationAction: enforce
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: target, namespace: $NS}, data: {k: '{{ "x" | ` + deniedFunction + ` }}'}}`)
	f.g.Eventually(f.condition("denied", 0), eventually, poll).Should(And(
		HavePrefix("NonCompliant (Error processing template): failed to resolve the template "), HaveSuffix(denied)))
	f.g.Expect(f.configMap(f.ns, "target")(f.g)).To(BeNil())

	f.policy(`
metadata: {name: denied-raw}
spec:
  remediationAction: enforce
  object-templates-raw: |
    - complianceType: musthave
      objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: raw-target, namespace: $NS}, data: {k: '{{ "x" | ` + deniedFunction + ` }}'}}`)
	f.g.Eventually(f.condition("denied-raw", 0), eventually, poll).Should(And(
		HavePrefix("NonCompliant"), HaveSuffix(denied)))
	f.g.Expect(f.configMap(f.ns, "raw-target")(f.g)).To(BeNil())

	f.policy(`
metadata: {name: allowed}
spec:
  remediationAction: enforce
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: allowed, namespace: $NS}, data: {k: '{{ "x" | sha256sum }}'}}`)
	f.g.Eventually(f.configMap(f.ns, "allowed"), eventually, poll).Should(Equal(map[string]string{
		"k": "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"}))
}
