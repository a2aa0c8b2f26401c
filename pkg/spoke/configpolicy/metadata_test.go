package configpolicy

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// TestCompareObjectMetadataMode checks that labels and annotations are
// compared with metadataComplianceType and the rest with complianceType,
// in both directions, and what enforce would write.
func TestCompareObjectMetadataMode(t *testing.T) {
	const existing = `
metadata: {name: cm, labels: {a: "1", extra: y}, annotations: {kubectl.kubernetes.io/last-applied-configuration: "{}"}}
data: {k: v, other: z}`
	for _, tt := range []struct {
		name           string
		template       string
		mode, metaMode Mode
		wantMatch      bool
		want           string
	}{
		{name: "musthave both", template: "{metadata: {labels: {a: '1'}}, data: {k: v}}", mode: Subset, metaMode: Subset,
			wantMatch: true, want: existing},
		{name: "mustonlyhave spec, musthave metadata", template: "{metadata: {labels: {a: '1'}}, data: {k: v}}",
			mode: Exact, metaMode: Subset, want: `
metadata: {name: cm, labels: {a: "1", extra: y}, annotations: {kubectl.kubernetes.io/last-applied-configuration: "{}"}}
data: {k: v}`},
		{name: "musthave spec, mustonlyhave metadata", template: "{metadata: {labels: {a: '1'}}, data: {k: v}}",
			mode: Subset, metaMode: Exact, want: `
metadata: {name: cm, labels: {a: "1"}, annotations: {kubectl.kubernetes.io/last-applied-configuration: "{}"}}
data: {k: v, other: z}`},
		{name: "mustonlyhave metadata keeps kubectl's annotation", template: "{metadata: {annotations: {b: '2'}}}",
			mode: Subset, metaMode: Exact, want: `
metadata: {name: cm, labels: {a: "1", extra: y}, annotations: {b: "2", kubectl.kubernetes.io/last-applied-configuration: "{}"}}
data: {k: v, other: z}`},
		{name: "mustonlyhave metadata matches without kubectl's annotation", template: "{metadata: {labels: {a: '1', extra: y}, annotations: {}}}",
			mode: Subset, metaMode: Exact, wantMatch: true, want: existing},
		{name: "metadata not set is not compared", template: "{data: {k: v, other: z}}", mode: Exact, metaMode: Exact,
			wantMatch: true, want: existing},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			tmpl := value(t, tt.template).(map[string]any)
			match, desired := compareObject(tmpl, value(t, existing).(map[string]any), tt.mode, tt.metaMode)
			g.Expect(match).To(Equal(tt.wantMatch))
			g.Expect(desired).To(Equal(value(t, tt.want)))
		})
	}
}

// TestMetadataComplianceType enforces metadataComplianceType in both
// directions: mustonlyhave data with musthave labels, and musthave data
// with mustonlyhave labels.
func TestMetadataComplianceType(t *testing.T) {
	f := newFixture(t)
	f.object(&corev1.ConfigMap{}, `{metadata: {name: loose, labels: {a: "1", extra: "y"}}, data: {k: v, other: z}}`)
	f.object(&corev1.ConfigMap{}, `{metadata: {name: strict, labels: {a: "1", extra: "y"}}, data: {k: v, other: z}}`)
	f.policy(`
metadata: {name: meta}
spec:
  remediationAction: inform
  object-templates:
  - complianceType: mustonlyhave
    metadataComplianceType: musthave
    objectDefinition:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: loose, namespace: $NS, labels: {a: "1"}}
      data: {k: v, other: z}
  - complianceType: musthave
    metadataComplianceType: mustonlyhave
    objectDefinition:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: strict, namespace: $NS, labels: {a: "1"}}
      data: {k: v}`)
	f.g.Eventually(f.status("meta"), eventually, poll).Should(HaveField("CompliancyDetails", HaveLen(2)))
	f.g.Expect(messages(f.status("meta")(f.g))).To(Equal([]string{
		"configmaps [loose] found as specified in namespace " + f.ns,
		"configmaps [strict] found but not as specified in namespace " + f.ns,
	}))

	f.updateSpec("meta", func(s *policyv1.ConfigurationPolicySpec) {
		s.RemediationAction = policyv1.Enforce
		s.ObjectTemplates[0].ObjectDefinition.Raw = []byte(`{"apiVersion": "v1", "kind": "ConfigMap", ` +
			`"metadata": {"name": "loose", "namespace": "` + f.ns + `", "labels": {"a": "1"}}, "data": {"k": "v"}}`)
	})
	f.g.Eventually(f.message("meta"), eventually, poll).Should(Equal("Compliant: configmaps [loose] found as specified in namespace " + f.ns))
	f.g.Eventually(f.status("meta"), eventually, poll).Should(HaveField("ComplianceState", policyv1.Compliant))
	loose, strict := f.configMapObject("loose"), f.configMapObject("strict")
	f.g.Expect(loose.Data).To(Equal(map[string]string{"k": "v"}), "mustonlyhave data")
	f.g.Expect(loose.Labels).To(Equal(map[string]string{"a": "1", "extra": "y"}), "musthave labels")
	f.g.Expect(strict.Data).To(Equal(map[string]string{"k": "v", "other": "z"}), "musthave data")
	f.g.Expect(strict.Labels).To(Equal(map[string]string{"a": "1"}), "mustonlyhave labels")
}

// configMapObject gets ConfigMap name in the test's namespace.
func (f *fixture) configMapObject(name string) *corev1.ConfigMap {
	f.t.Helper()
	cm := &corev1.ConfigMap{}
	f.g.Expect(f.c.Get(f.t.Context(), types.NamespacedName{Namespace: f.ns, Name: name}, cm)).To(Succeed())
	return cm
}
