package configpolicy

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// TestObjectSelector checks objectSelector as OCM has it: every selected
// object is evaluated as if the template named it (and enforce updates
// each); a selector that selects nothing complies; a named template ignores
// it; an empty selector selects every object; mustnothave concerns the
// selected objects that match it.
func TestObjectSelector(t *testing.T) {
	f := newFixture(t)
	f.object(&corev1.ConfigMap{}, `{metadata: {name: a, labels: {app: x}}, data: {k: old}}`)
	f.object(&corev1.ConfigMap{}, `{metadata: {name: b, labels: {app: x}}, data: {k: v}}`)
	f.object(&corev1.ConfigMap{}, `{metadata: {name: c, labels: {app: y}}, data: {k: old}}`)
	f.policy(`
metadata: {name: selector}
spec:
  remediationAction: inform
  object-templates:
  - complianceType: musthave
    objectSelector: {matchLabels: {app: x}}
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {namespace: $NS}, data: {k: v}}
  - complianceType: musthave
    objectSelector: {matchExpressions: [{key: app, operator: In, values: [none]}]}
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {namespace: $NS}, data: {k: v}}
  - complianceType: musthave
    objectSelector: {matchLabels: {app: x}}
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: $NS}, data: {k: old}}
  - complianceType: mustnothave
    objectSelector: {}
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {namespace: $NS}, data: {k: gone}}`)
	f.g.Eventually(f.status("selector"), eventually, poll).Should(HaveField("CompliancyDetails", HaveLen(4)))
	st := f.status("selector")(f.g)
	f.g.Expect(st.ComplianceState).To(Equal(policyv1.NonCompliant))
	f.g.Expect(messages(st)).To(Equal([]string{
		"configmaps [a] found but not as specified in namespace " + f.ns,
		"No objects of kind ConfigMap were matched from the policy objectSelector",
		"configmaps [c] found as specified in namespace " + f.ns,
		"configmaps missing as expected in namespace " + f.ns,
	}))
	f.g.Expect(st.CompliancyDetails[1].Conditions[0].Reason).To(BeEmpty())
	f.g.Expect(st.RelatedObjects).To(ConsistOf(
		relatedNamed("a", "NonCompliant", ReasonFoundNoMatch),
		relatedNamed("b", "Compliant", ReasonFoundAsExpected),
		relatedNamed("c", "Compliant", ReasonFoundAsExpected),
	))

	f.updateSpec("selector", func(s *policyv1.ConfigurationPolicySpec) { s.RemediationAction = policyv1.Enforce })
	f.g.Eventually(f.configMap(f.ns, "a"), eventually, poll).Should(Equal(map[string]string{"k": "v"}))
	f.g.Eventually(f.events(), eventually, poll).Should(ContainElement(
		"Compliant; notification - configmaps [b] found as specified in namespace " + f.ns +
			"; configmaps [a] was updated successfully in namespace " + f.ns +
			"; notification - No objects of kind ConfigMap were matched from the policy objectSelector" +
			"; notification - configmaps [c] found as specified in namespace " + f.ns +
			"; notification - configmaps missing as expected in namespace " + f.ns))
	f.g.Eventually(f.message("selector"), eventually, poll).Should(Equal(
		"Compliant: configmaps [a, b] found as specified in namespace " + f.ns))
	f.g.Expect(f.configMap(f.ns, "c")(f.g)).To(Equal(map[string]string{"k": "old"}), "not selected")
}

// TestObjectSelectorMustNotHave deletes, under enforce, the selected
// objects that match a mustnothave template, and only those.
func TestObjectSelectorMustNotHave(t *testing.T) {
	f := newFixture(t)
	f.object(&corev1.ConfigMap{}, `{metadata: {name: stale, labels: {app: x}}, data: {state: stale}}`)
	f.object(&corev1.ConfigMap{}, `{metadata: {name: fresh, labels: {app: x}}, data: {state: fresh}}`)
	f.object(&corev1.ConfigMap{}, `{metadata: {name: other, labels: {app: y}}, data: {state: stale}}`)
	f.policy(`
metadata: {name: clean}
spec:
  remediationAction: enforce
  object-templates:
  - complianceType: mustnothave
    objectSelector: {matchLabels: {app: x}}
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {namespace: $NS}, data: {state: stale}}`)
	f.g.Eventually(f.configMap(f.ns, "stale"), eventually, poll).Should(BeNil())
	f.g.Eventually(f.message("clean"), eventually, poll).Should(Equal(
		"Compliant: configmaps missing as expected in namespace " + f.ns))
	f.g.Expect(f.configMap(f.ns, "fresh")(f.g)).NotTo(BeNil())
	f.g.Expect(f.configMap(f.ns, "other")(f.g)).NotTo(BeNil())
	f.g.Expect(f.events()(f.g)).To(ContainElement(
		"Compliant; notification - configmaps [stale] was deleted successfully in namespace " + f.ns))
	f.g.Expect(f.status("clean")(f.g).RelatedObjects).To(ConsistOf(relatedNamed("fresh", "Compliant", "")))
}

func messages(st policyv1.ConfigurationPolicyStatus) []string {
	var out []string
	for _, d := range st.CompliancyDetails {
		out = append(out, d.Conditions[0].Message)
	}
	return out
}

func relatedNamed(name, compliant, reason string) any {
	return And(HaveField("Object.Metadata.Name", name), HaveField("Compliant", compliant), HaveField("Reason", reason))
}
