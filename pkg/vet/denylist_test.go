package vet

import (
	"testing"

	. "github.com/onsi/gomega"
)

// deniedPolicy calls sha1sum in a hub template (line 17), a managed
// template (line 18), customMessage (line 19), which the template library
// does not render, and object-templates-raw (line 31).
const deniedPolicy = `apiVersion: policy.open-cluster-management.io/v1
kind: Policy
metadata: {name: p, namespace: default}
spec:
  policy-templates:
    - objectDefinition:
        apiVersion: policy.open-cluster-management.io/v1
        kind: ConfigurationPolicy
        metadata: {name: t}
        spec:
          object-templates:
            - complianceType: musthave
              objectDefinition:
                apiVersion: v1
                kind: ConfigMap
                metadata: {name: c, namespace: default}
                data: {hub: '{{hub "x" | sha1sum hub}}',
                  managed: '{{ "y" | sha1sum }}', other: '{{ "z" | sha256sum }}'}
          customMessage: {compliant: '{{ "m" | sha1sum }}'}
    - objectDefinition:
        apiVersion: policy.open-cluster-management.io/v1
        kind: ConfigurationPolicy
        metadata: {name: raw}
        spec:
          object-templates-raw: |
            - complianceType: musthave
              objectDefinition:
                apiVersion: v1
                kind: ConfigMap
                metadata: {name: r, namespace: default}
                data: {raw: '{{ "r" | sha1sum }}'}`

// TestTemplatesDenylist warns of each call of a denied function, at its
// line, in the templates the library resolves; without a deny-list the
// same policy is clean.
func TestTemplatesDenylist(t *testing.T) {
	g := NewWithT(t)
	docs, findings := Parse("f.yaml", []byte(deniedPolicy))
	g.Expect(findings).To(BeEmpty())

	plain, err := New(Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(plain.Check(t.Context(), docs)).To(BeEmpty())

	denying, err := New(Options{TemplateFuncDenylist: []string{"sha1sum", "lookup"}})
	g.Expect(err).NotTo(HaveOccurred())
	var got []string
	for _, f := range denying.Check(t.Context(), docs) {
		got = append(got, f.String())
	}
	const tail = ` is resolved with that list, it fails with "use of denylisted template function: function 'sha1sum' is not allowed"`
	g.Expect(got).To(Equal([]string{
		`f.yaml:17: warning: [template] Policy default/p policy-templates[0]: ConfigurationPolicy t: hub template: sha1sum is in the --template-function-denylist given: where the hub template` + tail,
		`f.yaml:18: warning: [template] Policy default/p policy-templates[0]: ConfigurationPolicy t: managed template: sha1sum is in the --template-function-denylist given: where the managed template` + tail,
		`f.yaml:31: warning: [template] Policy default/p policy-templates[1]: ConfigurationPolicy raw: object-templates-raw template: sha1sum is in the --template-function-denylist given: where the object-templates-raw template` + tail,
	}))
}
