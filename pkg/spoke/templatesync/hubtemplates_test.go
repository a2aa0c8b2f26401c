package templatesync_test

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/depgraph"
	"github.com/canopy-policy/canopy/pkg/spoke/templatesync"
	"github.com/canopy-policy/canopy/pkg/templating"
)

// TestPlanHubError checks which templates Plan marks with a hub template
// error, and that a template's annotations (the encryption IV among them)
// reach the object it writes.
func TestPlanHubError(t *testing.T) {
	const (
		hubError = `template: tmpl:1:12: executing "tmpl" at <fromConfigMap "x" "y" "z">: error calling fromConfigMap: configmaps "y" not found`
		literal  = `{"data":"{{hub .ManagedClusterName hub}}"}`
	)
	tests := []struct {
		name              string
		policyAnnotations map[string]string
		annotations       string // JSON of the objectDefinition's annotations
		spec              string // JSON of its spec
		want              string
	}{
		{name: "resolved", annotations: `{}`, spec: `{"x":"cluster1"}`, want: ""},
		{name: "managed template", annotations: `{}`, spec: `{"x":"{{ fromClusterClaim \"name\" }}"}`, want: ""},
		{name: "hub error", annotations: `{"` + templating.HubTemplatesErrorAnnotation + `":` + quote(hubError) + `}`,
			spec: `{"x":"{{hub fromConfigMap \"x\" \"y\" \"z\" hub}}"}`, want: hubError},
		{name: "hub error without hub template left", annotations: `{"` + templating.HubTemplatesErrorAnnotation + `":"boom"}`,
			spec: `{}`, want: "boom"},
		{name: "unresolved hub template", annotations: `{}`, spec: literal, want: templatesync.UnresolvedHubTemplates},
		{name: "disabled on the template", annotations: `{"` + templating.DisableTemplatesAnnotation + `":"true"}`, spec: literal, want: ""},
		{name: "disabled on the policy", policyAnnotations: map[string]string{templating.DisableTemplatesAnnotation: "True"},
			annotations: `{}`, spec: literal, want: ""},
		{name: "not disabled by a bad value", annotations: `{"` + templating.DisableTemplatesAnnotation + `":"yes"}`, spec: literal,
			want: templatesync.UnresolvedHubTemplates},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			raw := `{"apiVersion":"policy.open-cluster-management.io/v1","kind":"ConfigurationPolicy",` +
				`"metadata":{"name":"cp","annotations":` + tt.annotations + `},"spec":` + tt.spec + `}`
			p := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "p", Annotations: tt.policyAnnotations}}
			p.Spec.PolicyTemplates = []policyv1.PolicyTemplate{{ObjectDefinition: runtime.RawExtension{Raw: []byte(raw)}}}
			plan := templatesync.Plan(p, inputs())
			g.Expect(plan).To(HaveLen(1))
			g.Expect(plan[0].Problem).To(BeEmpty())
			g.Expect(plan[0].HubError).To(Equal(tt.want))
			g.Expect(plan[0].Object).NotTo(BeNil()) // names the object to delete
		})
	}
}

func TestPlanKeepsEncryptionIV(t *testing.T) {
	g := NewWithT(t)
	raw := `{"apiVersion":"policy.open-cluster-management.io/v1","kind":"ConfigurationPolicy",` +
		`"metadata":{"name":"cp","annotations":{"` + templating.IVAnnotation + `":"7cbf5ZT6LJYEr8XMy/P9lg=="}},` +
		`"spec":{"x":"$ocm_encrypted:Eg8MXtHGNjPoyKsGTmeCIA=="}}`
	p := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "p"}}
	p.Spec.PolicyTemplates = []policyv1.PolicyTemplate{{ObjectDefinition: runtime.RawExtension{Raw: []byte(raw)}}}
	plan := templatesync.Plan(p, inputs())
	g.Expect(plan).To(HaveLen(1))
	g.Expect(plan[0].HubError).To(BeEmpty())
	g.Expect(plan[0].Object.GetAnnotations()).To(HaveKeyWithValue(templating.IVAnnotation, "7cbf5ZT6LJYEr8XMy/P9lg=="))
}

func inputs() templatesync.Inputs {
	return templatesync.Inputs{
		TemplateKinds: map[schema.GroupKind]bool{{Group: policyv1.GroupName, Kind: "ConfigurationPolicy"}: true},
		Graph:         depgraph.Graph{},
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
