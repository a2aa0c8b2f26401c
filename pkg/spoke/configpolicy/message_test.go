package configpolicy

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

func TestComplianceMessage(t *testing.T) {
	cm := policyv1.ObjectResource{APIVersion: "v1", Kind: "ConfigMap", Metadata: policyv1.ObjectMetadata{Name: "cm", Namespace: "n"}}
	secret := policyv1.ObjectResource{APIVersion: "v1", Kind: "Secret", Metadata: policyv1.ObjectMetadata{Name: "s", Namespace: "n"}}
	status := func(state policyv1.ComplianceState) policyv1.ConfigurationPolicyStatus {
		typ := ConditionNotification
		if state != policyv1.Compliant {
			typ = ConditionViolation
		}
		return policyv1.ConfigurationPolicyStatus{
			ComplianceState:   state,
			CompliancyDetails: []policyv1.TemplateStatus{{Conditions: []policyv1.TemplateCondition{{Type: typ, Message: "configmaps [cm] x"}}}},
			RelatedObjects: []policyv1.RelatedObject{
				{Object: cm, Compliant: string(state), Reason: ReasonFoundAsExpected},
				{Object: secret, Compliant: string(state), Reason: ReasonFoundAsExpected},
			},
		}
	}
	watched := []templateOutcome{{objects: map[policyv1.ObjectResource]map[string]any{
		cm:     {"kind": "ConfigMap", "metadata": map[string]any{"name": "cm"}, "data": map[string]any{"color": "blue"}},
		secret: {"kind": "Secret", "metadata": map[string]any{"name": "s"}, "data": map[string]any{"password": "aHVudGVyMg=="}},
	}}}
	const objects = `{{ range .Policy.status.relatedObjects }}{{ .object.kind }} {{ .object.metadata.name }}: ` +
		`{{ .object.data }}; {{ end }}`
	for _, tt := range []struct {
		name      string
		custom    policyv1.CustomMessage
		state     policyv1.ComplianceState
		templates []string
		outcomes  []templateOutcome
		want      string
	}{
		{name: "no custom message", state: policyv1.Compliant, custom: policyv1.CustomMessage{NonCompliant: "bad"},
			want: "notification - configmaps [cm] x"},
		{name: "default message with its state", state: policyv1.Compliant,
			custom: policyv1.CustomMessage{Compliant: "Customized! {{ .DefaultMessage }}"},
			want:   "Customized! Compliant; notification - configmaps [cm] x"},
		{name: "noncompliant template", state: policyv1.NonCompliant,
			custom: policyv1.CustomMessage{Compliant: "good", NonCompliant: "{{ .Policy.metadata.name }} is bad"},
			want:   "p is bad"},
		{name: "pending uses the noncompliant template", state: policyv1.Pending,
			custom: policyv1.CustomMessage{NonCompliant: "{{ .Policy.status.compliant }}"}, want: "Pending"},
		{name: "the state the template gives is not repeated", state: policyv1.Compliant,
			custom: policyv1.CustomMessage{Compliant: "Compliant; all {{ .Policy.kind }}s fine"},
			want:   "all ConfigurationPolicys fine"},
		{name: "sprig functions", state: policyv1.Compliant,
			custom: policyv1.CustomMessage{Compliant: "{{ upper .DefaultMessage }}"}, want: "COMPLIANT; NOTIFICATION - CONFIGMAPS [CM] X"},
		{name: "parse error", state: policyv1.Compliant, custom: policyv1.CustomMessage{Compliant: "{{ if }"},
			want: "notification - configmaps [cm] x (failure processing the custom message: failed to parse custom " +
				"template: template: custom-msg:1: unexpected \"}\" in if)"},
		{name: "execution error", state: policyv1.NonCompliant, custom: policyv1.CustomMessage{NonCompliant: `{{ fail "no" }}`},
			want: "violation - configmaps [cm] x (failure processing the custom message: failed to execute: template: " +
				"custom-msg:1:3: executing \"custom-msg\" at <fail \"no\">: error calling fail: no)"},
		{name: "functions that read the cluster do not exist", state: policyv1.Compliant,
			custom: policyv1.CustomMessage{Compliant: `{{ fromSecret "n" "s" "k" }}`},
			want: "notification - configmaps [cm] x (failure processing the custom message: failed to parse custom " +
				"template: template: custom-msg:1: function \"fromSecret\" not defined)"},
		{name: "identities only when not watching", state: policyv1.Compliant,
			custom: policyv1.CustomMessage{Compliant: objects}, want: "ConfigMap cm: <no value>; Secret s: <no value>; "},
		{name: "whole objects when watching, never a Secret", state: policyv1.Compliant, outcomes: watched,
			custom: policyv1.CustomMessage{Compliant: objects}, want: "ConfigMap cm: map[color:blue]; Secret s: <no value>; "},
		{name: "no whole objects when a template reads Secrets", state: policyv1.Compliant, outcomes: watched,
			templates: []string{`{"data": {"k": "{{ fromSecret \"n\" \"s\" \"k\" }}"}}`},
			custom:    policyv1.CustomMessage{Compliant: objects}, want: "ConfigMap cm: <no value>; Secret s: <no value>; "},
		{name: "related object fields", state: policyv1.Compliant,
			custom: policyv1.CustomMessage{Compliant: `{{ range .Policy.status.relatedObjects }}{{ .reason }}. {{ end }}`},
			want:   "Resource found as expected. Resource found as expected. "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := &policyv1.ConfigurationPolicy{Status: status(tt.state)}
			p.Name, p.Spec.CustomMessage = "p", tt.custom
			for _, raw := range tt.templates {
				p.Spec.ObjectTemplates = append(p.Spec.ObjectTemplates, policyv1.ObjectTemplate{
					ObjectDefinition: runtime.RawExtension{Raw: []byte(raw)}})
			}
			NewWithT(t).Expect(complianceMessage(p, tt.outcomes)).To(Equal(tt.want))
		})
	}
}

func TestMayHoldSecrets(t *testing.T) {
	for _, tt := range []struct {
		raw, templatesRaw string
		want              bool
	}{
		{raw: `{"data": {"k": "v"}}`},
		{raw: `{"data": {"k": "{{ fromConfigMap \"n\" \"c\" \"k\" }}"}}`},
		{raw: `{"data": {"k": "{{ fromSecret \"n\" \"s\" \"k\" }}"}}`, want: true},
		{raw: `{"data": "{{ copySecretData \"n\" \"s\" }}"}`, want: true},
		{raw: `{"data": {"k": "{{ (lookup \"v1\" \"Secret\" \"n\" \"s\").data.k }}"}}`, want: true},
		{raw: `{"data": {"k": "$ocm_encrypted:abc"}}`, want: true},
		{templatesRaw: `- objectDefinition: {data: {k: '{{ fromSecret "n" "s" "k" }}'}}`, want: true},
	} {
		p := &policyv1.ConfigurationPolicy{}
		p.Spec.ObjectTemplatesRaw = tt.templatesRaw
		if tt.raw != "" {
			p.Spec.ObjectTemplates = []policyv1.ObjectTemplate{{ObjectDefinition: runtime.RawExtension{Raw: []byte(tt.raw)}}}
		}
		NewWithT(t).Expect(mayHoldSecrets(p)).To(Equal(tt.want), tt.raw+tt.templatesRaw)
	}
}

// TestCustomMessage renders customMessage in the compliance events, with
// the whole related objects of a watched policy, and falls back to the
// default message when the template does not parse. The status keeps the
// default messages.
func TestCustomMessage(t *testing.T) {
	f := newFixture(t)
	f.object(&corev1.ConfigMap{}, `{metadata: {name: paint}, data: {color: blue}}`)
	f.policy(`
metadata: {name: custom}
spec:
  remediationAction: inform
  customMessage:
    compliant: '{{ range .Policy.status.relatedObjects }}{{ .object.kind }} {{ .object.metadata.name }} is {{ .object.data.color }}; {{ end }}'
    noncompliant: '{{ if }}'
  object-templates:
  - complianceType: musthave
    objectDefinition:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: paint, namespace: $NS}
      data: {color: blue}`)
	f.g.Eventually(f.events(), eventually, poll).Should(Equal([]string{"Compliant; ConfigMap paint is blue; "}))
	f.g.Expect(f.message("custom")(f.g)).To(Equal("Compliant: configmaps [paint] found as specified in namespace " + f.ns))

	f.patchConfigMap("paint", map[string]string{"color": "red"})
	f.g.Eventually(f.events(), eventually, poll).Should(HaveLen(2))
	f.g.Expect(f.events()(f.g)[1]).To(HavePrefix("NonCompliant; violation - configmaps [paint] found but not as specified " +
		"in namespace " + f.ns + " (failure processing the custom message: failed to parse custom template: "))
}
