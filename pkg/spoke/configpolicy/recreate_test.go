package configpolicy

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

func TestRecreateAction(t *testing.T) {
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "x",
		field.ErrorList{field.Forbidden(field.NewPath("data"), "field is immutable when `immutable` is set")})
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "x", nil)
	for _, tt := range []struct {
		name   string
		option policyv1.RecreateOption
		err    error
		want   updateAction
	}{
		{name: "default updates", option: "", want: actionUpdate},
		{name: "None updates", option: policyv1.RecreateNone, want: actionUpdate},
		{name: "IfRequired updates when it can", option: policyv1.RecreateIfRequired, want: actionUpdate},
		{name: "Always recreates", option: policyv1.RecreateAlways, want: actionRecreate},
		{name: "default refuses an invalid update", option: "", err: invalid, want: actionRefuse},
		{name: "None refuses an invalid update", option: policyv1.RecreateNone, err: invalid, want: actionRefuse},
		{name: "IfRequired recreates", option: policyv1.RecreateIfRequired, err: invalid, want: actionRecreate},
		{name: "Always recreates on invalid", option: policyv1.RecreateAlways, err: invalid, want: actionRecreate},
		{name: "other errors are the update's", option: policyv1.RecreateAlways, err: forbidden, want: actionUpdate},
		{name: "other errors under IfRequired", option: policyv1.RecreateIfRequired, err: forbidden, want: actionUpdate},
	} {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(recreateAction(tt.option, tt.err)).To(Equal(tt.want))
		})
	}
}

// TestRecreateIfRequired enforces a ConfigMap whose data is immutable: with
// recreateOption None the update is refused with OCM's message; with
// IfRequired the object is deleted and created again.
func TestRecreateIfRequired(t *testing.T) {
	f := newFixture(t)
	orig := f.object(&corev1.ConfigMap{}, `{metadata: {name: frozen}, immutable: true, data: {color: red}}`)
	f.policy(`
metadata: {name: recreate}
spec:
  remediationAction: enforce
  object-templates:
  - complianceType: musthave
    objectDefinition:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: frozen, namespace: $NS}
      data: {color: blue}`)
	refused := "NonCompliant: configmaps [frozen] in namespace " + f.ns + ` cannot be updated, likely due to immutable ` +
		`fields not matching, you may set spec["object-templates"][].recreateOption to recreate the object`
	f.g.Eventually(f.message("recreate"), eventually, poll).Should(Equal(refused))
	f.g.Consistently(f.message("recreate"), quiet, poll).Should(Equal(refused))
	f.g.Expect(f.configMap(f.ns, "frozen")(f.g)).To(Equal(map[string]string{"color": "red"}))

	f.updateSpec("recreate", func(s *policyv1.ConfigurationPolicySpec) {
		s.ObjectTemplates[0].RecreateOption = policyv1.RecreateIfRequired
	})
	f.g.Eventually(f.configMap(f.ns, "frozen"), eventually, poll).Should(Equal(map[string]string{"color": "blue"}))
	f.g.Eventually(f.message("recreate"), eventually, poll).Should(Equal(
		"Compliant: configmaps [frozen] found as specified in namespace " + f.ns))
	f.g.Expect(f.uid("frozen")).NotTo(Equal(orig.GetUID()), "recreated")
	f.g.Eventually(f.events(), eventually, poll).Should(ContainElement(
		"Compliant; notification - configmaps [frozen] was updated successfully in namespace " + f.ns))
	rel := f.status("recreate")(f.g).RelatedObjects
	f.g.Expect(rel).To(HaveLen(1))
	f.g.Expect(*rel[0].Properties.CreatedByPolicy).To(BeFalse(), "recreating is not creating")
	f.g.Expect(rel[0].Properties.UID).To(Equal(string(f.uid("frozen"))))
}

// TestRecreateAlways recreates on every update, keeps createdByPolicy of an
// object the policy created, and never recreates under inform.
func TestRecreateAlways(t *testing.T) {
	f := newFixture(t)
	f.policy(`
metadata: {name: always}
spec:
  remediationAction: enforce
  object-templates:
  - complianceType: musthave
    recreateOption: Always
    objectDefinition:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: always, namespace: $NS}
      data: {color: blue}`)
	f.g.Eventually(f.message("always"), eventually, poll).Should(Equal(
		"Compliant: configmaps [always] found as specified in namespace " + f.ns))
	first := f.uid("always")

	f.patchConfigMap("always", map[string]string{"color": "red", "size": "big"})
	f.g.Eventually(f.uid, eventually, poll).WithArguments("always").ShouldNot(Equal(first))
	f.g.Eventually(f.configMap(f.ns, "always"), eventually, poll).Should(Equal(map[string]string{"color": "blue"}),
		"created from the template: what it does not set is gone")
	f.g.Eventually(func(g Gomega) policyv1.ObjectProperties {
		rel := f.status("always")(g).RelatedObjects
		g.Expect(rel).To(HaveLen(1))
		return *rel[0].Properties
	}, eventually, poll).Should(And(
		HaveField("CreatedByPolicy", HaveValue(BeTrue())), HaveField("UID", Equal(string(f.uid("always"))))))

	f.updateSpec("always", func(s *policyv1.ConfigurationPolicySpec) { s.RemediationAction = policyv1.Inform })
	second := f.uid("always")
	f.patchConfigMap("always", map[string]string{"color": "red"})
	f.g.Eventually(f.message("always"), eventually, poll).Should(Equal(
		"NonCompliant: configmaps [always] found but not as specified in namespace " + f.ns))
	f.g.Consistently(f.uid, quiet, poll).WithArguments("always").Should(Equal(second), "inform never recreates")
}

// TestRecreateWaitsForFinalizers recreates an object held by a finalizer:
// the create times out with OCM's message until the finalizer goes.
func TestRecreateWaitsForFinalizers(t *testing.T) {
	f := newFixture(t)
	f.object(&corev1.ConfigMap{}, `{metadata: {name: held, finalizers: [canopy.test/hold]}, data: {city: Durham}}`)
	f.policy(`
metadata: {name: held}
spec:
  remediationAction: enforce
  object-templates:
  - complianceType: musthave
    recreateOption: Always
    objectDefinition:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: held, namespace: $NS}
      data: {city: Raleigh}`)
	f.g.Eventually(f.message("held"), eventually, poll).Should(Equal("NonCompliant: configmaps [held] in namespace " + f.ns +
		" timed out waiting for the object to delete during recreate, will retry on the next policy evaluation"))

	cm := &corev1.ConfigMap{}
	f.g.Expect(f.c.Get(t.Context(), types.NamespacedName{Namespace: f.ns, Name: "held"}, cm)).To(Succeed())
	before := cm.DeepCopy()
	cm.Finalizers = nil
	f.g.Expect(f.c.Patch(t.Context(), cm, client.MergeFrom(before))).To(Succeed())
	f.g.Eventually(f.configMap(f.ns, "held"), eventually, poll).Should(Equal(map[string]string{"city": "Raleigh"}))
	f.g.Eventually(f.message("held"), eventually, poll).Should(HavePrefix("Compliant: "))
}

// TestRecreateNeverDeletesWhatItCannotCreate refuses a recreate whose new
// object the API server would reject, and keeps the object.
func TestRecreateNeverDeletesWhatItCannotCreate(t *testing.T) {
	f := newFixture(t)
	orig := f.object(&corev1.ConfigMap{}, `{metadata: {name: keep}, data: {color: red}}`)
	f.policy(`
metadata: {name: bad}
spec:
  remediationAction: enforce
  object-templates:
  - complianceType: musthave
    recreateOption: IfRequired
    objectDefinition:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: keep, namespace: $NS}
      data: {"not a key!": blue}`)
	f.g.Eventually(f.message("bad"), eventually, poll).Should(And(
		HavePrefix("NonCompliant: configmaps [keep] in namespace "+f.ns+" failed to recreate with the error `"),
		ContainSubstring("not a key!")))
	f.g.Consistently(f.uid, quiet, poll).WithArguments("keep").Should(Equal(orig.GetUID()))
	f.g.Expect(f.configMap(f.ns, "keep")(f.g)).To(Equal(map[string]string{"color": "red"}))
}

// uid returns the UID of ConfigMap name in the test's namespace, "" if it
// does not exist.
func (f *fixture) uid(name string) types.UID {
	cm := &corev1.ConfigMap{}
	if err := f.c.Get(f.t.Context(), types.NamespacedName{Namespace: f.ns, Name: name}, cm); err != nil {
		return ""
	}
	return cm.UID
}
