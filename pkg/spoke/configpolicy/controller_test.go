package configpolicy

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/types"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// TestMustHaveInform follows an informing musthave policy as the object
// appears, matches and drifts, and checks the status and one compliance
// event per change.
func TestMustHaveInform(t *testing.T) {
	f := newFixture(t)
	f.policy(`
metadata: {name: app-config}
spec:
  remediationAction: inform
  object-templates:
  - complianceType: musthave
    recordDiff: InStatus
    objectDefinition:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: app-config, namespace: $NS}
      data: {color: blue}`)
	f.g.Eventually(f.message("app-config"), eventually, poll).Should(Equal(
		"NonCompliant: configmaps [app-config] not found in namespace " + f.ns))
	st := f.status("app-config")(f.g)
	f.g.Expect(st.RelatedObjects).To(Equal([]policyv1.RelatedObject{{
		Object: policyv1.ObjectResource{APIVersion: "v1", Kind: "ConfigMap",
			Metadata: policyv1.ObjectMetadata{Name: "app-config", Namespace: f.ns}},
		Compliant: "NonCompliant", Reason: ReasonNotFound,
	}}))
	f.g.Expect(st.LastEvaluated).NotTo(BeEmpty())

	f.object(&corev1.ConfigMap{}, `{metadata: {name: app-config}, data: {color: blue, size: big}}`)
	f.g.Eventually(f.message("app-config"), eventually, poll).Should(Equal(
		"Compliant: configmaps [app-config] found as specified in namespace " + f.ns))
	st = f.status("app-config")(f.g)
	f.g.Expect(st.RelatedObjects).To(HaveLen(1))
	f.g.Expect(st.RelatedObjects[0].Reason).To(Equal(ReasonFoundAsExpected))
	f.g.Expect(*st.RelatedObjects[0].Properties.CreatedByPolicy).To(BeFalse())

	f.patchConfigMap("app-config", map[string]string{"color": "red"})
	f.g.Eventually(f.message("app-config"), eventually, poll).Should(Equal(
		"NonCompliant: configmaps [app-config] found but not as specified in namespace " + f.ns))
	f.g.Eventually(f.events(), eventually, poll).Should(Equal([]string{
		"NonCompliant; violation - configmaps [app-config] not found in namespace " + f.ns,
		"Compliant; notification - configmaps [app-config] found as specified in namespace " + f.ns,
		"NonCompliant; violation - configmaps [app-config] found but not as specified in namespace " + f.ns,
	}))
	f.g.Expect(f.configMap(f.ns, "app-config")(f.g)).To(Equal(map[string]string{"color": "red"}), "inform writes nothing")
	f.g.Expect(f.status("app-config")(f.g).RelatedObjects[0].Properties.Diff).To(ContainSubstring("-  color: red\n+  color: blue"))
}

// TestMustHaveEnforce creates a missing object, and adds a missing item to
// a list whose other items match by content, not position.
func TestMustHaveEnforce(t *testing.T) {
	f := newFixture(t)
	f.policy(`
metadata: {name: create}
spec:
  remediationAction: enforce
  object-templates:
  - complianceType: musthave
    objectDefinition:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: created, namespace: $NS, labels: {team: a}}
      data: {color: blue}`)
	f.g.Eventually(f.configMap(f.ns, "created"), eventually, poll).Should(Equal(map[string]string{"color": "blue"}))
	f.g.Eventually(f.message("create"), eventually, poll).Should(Equal(
		"Compliant: configmaps [created] found as specified in namespace " + f.ns))
	st := f.status("create")(f.g)
	f.g.Expect(st.RelatedObjects).To(HaveLen(1))
	f.g.Expect(*st.RelatedObjects[0].Properties.CreatedByPolicy).To(BeTrue())
	f.g.Expect(st.RelatedObjects[0].Properties.UID).NotTo(BeEmpty())
	f.g.Eventually(f.events(), eventually, poll).Should(Equal([]string{
		"Compliant; notification - configmaps [created] was created successfully in namespace " + f.ns,
		"Compliant; notification - configmaps [created] found as specified in namespace " + f.ns, // settled, as OCM reports it
	}))

	role := f.object(&rbacv1.Role{}, `
metadata: {name: reader}
rules:
- {apiGroups: [apps], resources: [deployments], verbs: [get]}
- {apiGroups: [""], resources: [pods], verbs: [watch, list, get]}`)
	f.policy(`
metadata: {name: role}
spec:
  remediationAction: enforce
  object-templates:
  - complianceType: musthave
    objectDefinition:
      apiVersion: rbac.authorization.k8s.io/v1
      kind: Role
      metadata: {name: reader, namespace: $NS}
      rules:
      - {apiGroups: [""], resources: [pods], verbs: [get, list, watch]}
      - {apiGroups: [""], resources: [configmaps], verbs: [get]}`)
	f.g.Eventually(f.message("role"), eventually, poll).Should(Equal(
		"Compliant: roles [reader] found as specified in namespace " + f.ns))
	got := &rbacv1.Role{}
	f.g.Expect(f.c.Get(t.Context(), types.NamespacedName{Namespace: f.ns, Name: "reader"}, got)).To(Succeed())
	f.g.Expect(got.Rules).To(HaveLen(3))
	f.g.Expect(got.Rules[:2]).To(Equal(role.(*rbacv1.Role).Rules), "the existing rules kept, in place")
	f.g.Expect(got.Rules[2].Resources).To(Equal([]string{"configmaps"}))
}

// TestMustOnlyHave reports extra fields under inform and removes them under
// enforce.
func TestMustOnlyHave(t *testing.T) {
	f := newFixture(t)
	f.object(&corev1.ConfigMap{}, `{metadata: {name: exact, labels: {a: b}}, data: {color: blue, extra: x}}`)
	f.policy(`
metadata: {name: exact}
spec:
  remediationAction: inform
  object-templates:
  - complianceType: mustonlyhave
    objectDefinition:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: exact, namespace: $NS}
      data: {color: blue}`)
	f.g.Eventually(f.message("exact"), eventually, poll).Should(Equal(
		"NonCompliant: configmaps [exact] found but not as specified in namespace " + f.ns))
	f.g.Expect(f.configMap(f.ns, "exact")(f.g)).To(HaveKey("extra"))

	f.updateSpec("exact", func(s *policyv1.ConfigurationPolicySpec) { s.RemediationAction = policyv1.Enforce })
	f.g.Eventually(f.configMap(f.ns, "exact"), eventually, poll).Should(Equal(map[string]string{"color": "blue"}))
	f.g.Eventually(f.message("exact"), eventually, poll).Should(Equal(
		"Compliant: configmaps [exact] found as specified in namespace " + f.ns))
	cm := &corev1.ConfigMap{}
	f.g.Expect(f.c.Get(t.Context(), types.NamespacedName{Namespace: f.ns, Name: "exact"}, cm)).To(Succeed())
	f.g.Expect(cm.Labels).To(Equal(map[string]string{"a": "b"}), "metadata the template does not set is kept")
	f.g.Eventually(f.events(), eventually, poll).Should(Equal([]string{
		"NonCompliant; violation - configmaps [exact] found but not as specified in namespace " + f.ns,
		"Compliant; notification - configmaps [exact] was updated successfully in namespace " + f.ns,
		"Compliant; notification - configmaps [exact] found as specified in namespace " + f.ns,
	}))
}

// TestMustNotHave reports and deletes objects that match, and leaves those
// that do not.
func TestMustNotHave(t *testing.T) {
	f := newFixture(t)
	f.object(&corev1.ConfigMap{}, `{metadata: {name: unwanted}, data: {a: "1"}}`)
	f.object(&corev1.ConfigMap{}, `{metadata: {name: other}, data: {a: "1"}}`)
	f.object(&corev1.ConfigMap{}, `{metadata: {name: legacy-1, labels: {legacy: "true"}}}`)
	f.object(&corev1.ConfigMap{}, `{metadata: {name: legacy-2, labels: {legacy: "true"}}}`)
	f.policy(`
metadata: {name: nothave}
spec:
  remediationAction: inform
  object-templates:
  - complianceType: mustnothave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: unwanted, namespace: $NS}}
  - complianceType: mustnothave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: other, namespace: $NS}, data: {a: "2"}}
  - complianceType: mustnothave
    objectSelector: {matchLabels: {legacy: "true"}}
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {namespace: $NS}}`)
	f.g.Eventually(f.status("nothave"), eventually, poll).Should(HaveField("CompliancyDetails", HaveLen(3)))
	st := f.status("nothave")(f.g)
	f.g.Expect(st.ComplianceState).To(Equal(policyv1.NonCompliant))
	f.g.Expect(st.CompliancyDetails[0].Conditions[0].Message).To(Equal("configmaps [unwanted] found in namespace " + f.ns))
	f.g.Expect(st.CompliancyDetails[1].Conditions[0].Message).To(Equal("configmaps [other] missing as expected in namespace " + f.ns))
	f.g.Expect(st.CompliancyDetails[2].Conditions[0].Message).To(Equal("configmaps [legacy-1, legacy-2] found in namespace " + f.ns))

	f.updateSpec("nothave", func(s *policyv1.ConfigurationPolicySpec) { s.RemediationAction = policyv1.Enforce })
	f.g.Eventually(f.configMap(f.ns, "unwanted"), eventually, poll).Should(BeNil())
	f.g.Eventually(f.configMap(f.ns, "legacy-1"), eventually, poll).Should(BeNil())
	f.g.Eventually(f.configMap(f.ns, "legacy-2"), eventually, poll).Should(BeNil())
	f.g.Expect(f.configMap(f.ns, "other")(f.g)).NotTo(BeNil())
	f.g.Eventually(f.message("nothave"), eventually, poll).Should(Equal(
		"Compliant: configmaps [unwanted] missing as expected in namespace " + f.ns))
	f.g.Eventually(f.events(), eventually, poll).Should(ContainElement(
		"Compliant; notification - configmaps [unwanted] was deleted successfully in namespace " + f.ns +
			"; notification - configmaps [other] missing as expected in namespace " + f.ns +
			"; notification - configmaps [legacy-1, legacy-2] was deleted successfully in namespace " + f.ns))
}

// TestDriftCorrected edits an enforced object and checks that the watch
// brings it back, with exactly one new compliance event.
func TestDriftCorrected(t *testing.T) {
	f := newFixture(t)
	f.policy(`
metadata: {name: drift}
spec:
  remediationAction: enforce
  object-templates:
  - complianceType: musthave
    objectDefinition:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: drift, namespace: $NS}
      data: {color: blue}`)
	f.g.Eventually(f.message("drift"), eventually, poll).Should(Equal(
		"Compliant: configmaps [drift] found as specified in namespace " + f.ns))
	f.g.Eventually(f.events(), eventually, poll).Should(HaveLen(2)) // created, then settled

	f.patchConfigMap("drift", map[string]string{"color": "red", "size": "big"})
	f.g.Eventually(f.configMap(f.ns, "drift"), eventually, poll).Should(Equal(map[string]string{"color": "blue", "size": "big"}))
	want := []string{
		"Compliant; notification - configmaps [drift] was created successfully in namespace " + f.ns,
		"Compliant; notification - configmaps [drift] found as specified in namespace " + f.ns,
		"Compliant; notification - configmaps [drift] was updated successfully in namespace " + f.ns,
		"Compliant; notification - configmaps [drift] found as specified in namespace " + f.ns,
	}
	f.g.Eventually(f.events(), eventually, poll).Should(Equal(want))
	f.g.Eventually(f.message("drift"), eventually, poll).Should(Equal(
		"Compliant: configmaps [drift] found as specified in namespace " + f.ns))
	f.g.Consistently(f.events(), quiet, poll).Should(Equal(want))
}

// TestParentByLabel finds the parent Policy by label when the template has
// no owner reference.
func TestParentByLabel(t *testing.T) {
	f := newFixture(t)
	p := &policyv1.ConfigurationPolicy{}
	f.object(p, `
metadata: {name: labelled, labels: {policy.open-cluster-management.io/policy: parent}}
spec:
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: Namespace, metadata: {name: $NS}}`)
	f.g.Eventually(f.events(), eventually, poll).Should(Equal([]string{
		"Compliant; notification - namespaces [" + f.ns + "] found as specified"}))
	list := &corev1.EventList{}
	f.g.Expect(f.c.List(t.Context(), list)).To(Succeed())
	for _, ev := range list.Items {
		if ev.InvolvedObject.UID == f.parent.UID {
			f.g.Expect(ev.Reason).To(Equal("policy: " + f.ns + "/labelled"))
			f.g.Expect(ev.Type).To(Equal(corev1.EventTypeNormal))
			f.g.Expect(ev.InvolvedObject.Kind).To(Equal("Policy"))
			f.g.Expect(ev.Related.UID).To(Equal(p.UID))
		}
	}
}
