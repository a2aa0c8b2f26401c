package configpolicy

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// TestBadInput checks that templates that cannot be applied make the
// policy NonCompliant with a message saying why, once: one event, and no
// evaluation loop (the policy's status stays as it is).
func TestBadInput(t *testing.T) {
	tests := []struct {
		name     string
		selector string
		template string
		want     string
		// watchesNamespaces is set for a selector that parses: the policy
		// is evaluated again on every namespace change (other tests
		// create namespaces), so only lastEvaluated may move.
		watchesNamespaces bool
	}{
		{name: "not an object", template: `{foo: bar}`,
			want: "The kind and apiVersion fields are required on the object template at index 0 in policy bad"},
		{name: "metadata not an object", template: `{apiVersion: v1, kind: ConfigMap, metadata: cm}`,
			want: "The metadata of the object template at index 0 in policy bad is not an object"},
		{name: "field rejected by the API server",
			template: `{apiVersion: v1, kind: ConfigMap, metadata: {name: cm, namespace: $NS}, data: {"bad key!": x}}`,
			want: "configmaps [cm] in namespace $NS is missing, and cannot be created, reason: " +
				"`ConfigMap \"cm\" is invalid: data[bad key!]: Invalid value: \"bad key!\": a valid config key must " +
				"consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or " +
				"'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`"},
		{name: "no namespace", template: `{apiVersion: v1, kind: ConfigMap, metadata: {name: cm}}`,
			want: "namespaced object cm of kind ConfigMap has no namespace specified from the policy " +
				"namespaceSelector nor the object metadata"},
		{name: "selector matches nothing", selector: `{include: ["no-such-namespace-*"]}`, watchesNamespaces: true,
			template: `{apiVersion: v1, kind: ConfigMap, metadata: {name: cm}}`,
			want: "namespaced object cm of kind ConfigMap has no namespace specified from the policy " +
				"namespaceSelector nor the object metadata"},
		{name: "label selector does not parse", selector: `{matchExpressions: [{key: env, operator: Near}]}`,
			template: `{apiVersion: v1, kind: ConfigMap, metadata: {name: cm}}`,
			want:     "Error filtering namespaces with provided namespaceSelector: error parsing namespace LabelSelector: \"Near\" is not a valid label selector operator"},
		{name: "pattern does not parse", selector: `{include: ["team-["]}`,
			template: `{apiVersion: v1, kind: ConfigMap, metadata: {name: cm}}`,
			want:     "Error filtering namespaces with provided namespaceSelector: error parsing 'include' pattern 'team-[': syntax error in pattern"},
		{name: "templated name", template: `{apiVersion: v1, kind: ConfigMap, metadata: {name: "{{ .Name }}", namespace: $NS}}`,
			want: `failed to resolve the template {"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"{{ .Name }}",` +
				`"namespace":"$NS"}}: template: tmpl:4:12: executing "tmpl" at <.Name>: can't evaluate field Name in ` +
				`type struct { ObjectNamespace string }`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			selector := ""
			if tt.selector != "" {
				selector = "\n  namespaceSelector: " + tt.selector
			}
			f.policy(`
metadata: {name: bad}
spec:
  remediationAction: enforce` + selector + `
  object-templates:
  - complianceType: musthave
    objectDefinition: ` + tt.template)
			want := "NonCompliant: " + strings.ReplaceAll(tt.want, "$NS", f.ns)
			f.g.Eventually(f.message("bad"), eventually, poll).Should(Equal(want))
			f.g.Eventually(f.events(), eventually, poll).Should(Equal([]string{"NonCompliant; violation - " + strings.ReplaceAll(tt.want, "$NS", f.ns)}))
			status := f.status("bad")
			if tt.watchesNamespaces {
				status = func(g Gomega) policyv1.ConfigurationPolicyStatus {
					st := f.status("bad")(g)
					st.LastEvaluated = ""
					return st
				}
			}
			settled := status(f.g)
			f.g.Consistently(status, quiet, poll).Should(Equal(settled), "evaluated again")
			f.g.Expect(f.events()(f.g)).To(HaveLen(1))
		})
	}
}

// TestMissingNamespaceAppears enforces an object in a namespace that does
// not exist yet, and checks that it is created when the namespace is.
func TestMissingNamespaceAppears(t *testing.T) {
	f := newFixture(t)
	later := f.ns + "-later"
	f.policy(`
metadata: {name: later}
spec:
  remediationAction: enforce
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: cm, namespace: ` + later + `}}`)
	f.g.Eventually(f.message("later"), eventually, poll).Should(Equal("NonCompliant: configmaps [cm] in namespace " +
		later + " is missing, and cannot be created, reason: `namespaces \"" + later + "\" not found`"))
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: later}}
	f.g.Expect(f.c.Create(t.Context(), ns)).To(Succeed())
	f.g.Eventually(f.message("later"), eventually, poll).Should(Equal(
		"Compliant: configmaps [cm] found as specified in namespace " + later))
	cm := &corev1.ConfigMap{}
	f.g.Expect(f.c.Get(t.Context(), types.NamespacedName{Namespace: later, Name: "cm"}, cm)).To(Succeed())
	st := f.status("later")(f.g)
	f.g.Expect(st.RelatedObjects[0].Properties.CreatedByPolicy).To(Equal(ptrTo(true)))
}
