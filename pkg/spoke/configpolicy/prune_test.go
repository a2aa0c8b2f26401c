package configpolicy

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

func TestUnlisted(t *testing.T) {
	rel := func(apiVersion, kind, ns, name string) policyv1.RelatedObject {
		return policyv1.RelatedObject{Object: policyv1.ObjectResource{APIVersion: apiVersion, Kind: kind,
			Metadata: policyv1.ObjectMetadata{Name: name, Namespace: ns}}}
	}
	prev := func(rels ...policyv1.RelatedObject) map[policyv1.ObjectResource]policyv1.RelatedObject {
		m := map[policyv1.ObjectResource]policyv1.RelatedObject{}
		for _, r := range rels {
			m[r.Object] = r
		}
		return m
	}
	for _, tt := range []struct {
		name     string
		previous map[policyv1.ObjectResource]policyv1.RelatedObject
		current  []policyv1.RelatedObject
		want     []policyv1.RelatedObject
	}{
		{name: "nothing before"},
		{name: "all still listed", previous: prev(rel("v1", "ConfigMap", "a", "x")),
			current: []policyv1.RelatedObject{rel("v1", "ConfigMap", "a", "x")}},
		{name: "renamed", previous: prev(rel("v1", "ConfigMap", "a", "old")),
			current: []policyv1.RelatedObject{rel("v1", "ConfigMap", "a", "new")},
			want:    []policyv1.RelatedObject{rel("v1", "ConfigMap", "a", "old")}},
		{name: "other namespace", previous: prev(rel("v1", "ConfigMap", "a", "x")),
			current: []policyv1.RelatedObject{rel("v1", "ConfigMap", "b", "x")},
			want:    []policyv1.RelatedObject{rel("v1", "ConfigMap", "a", "x")}},
		{name: "another version of the kind is the same object",
			previous: prev(rel("apps/v1beta1", "Deployment", "a", "x")),
			current:  []policyv1.RelatedObject{rel("apps/v1", "Deployment", "a", "x")}},
		{name: "another group is another object", previous: prev(rel("a.example/v1", "Widget", "a", "x")),
			current: []policyv1.RelatedObject{rel("b.example/v1", "Widget", "a", "x")},
			want:    []policyv1.RelatedObject{rel("a.example/v1", "Widget", "a", "x")}},
		{name: "all templates removed, in a stable order",
			previous: prev(rel("v1", "Namespace", "", "z"), rel("v1", "ConfigMap", "b", "x"), rel("v1", "ConfigMap", "a", "y")),
			want: []policyv1.RelatedObject{rel("v1", "ConfigMap", "a", "y"), rel("v1", "ConfigMap", "b", "x"),
				rel("v1", "Namespace", "", "z")}},
		{name: "entries without a name are not objects", previous: prev(rel("v1", "ConfigMap", "a", ""))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(unlisted(tt.previous, tt.current)).To(Equal(tt.want))
		})
	}
}

func TestFailed(t *testing.T) {
	for _, tt := range []struct {
		name    string
		results []objectResult
		want    bool
	}{
		{name: "compliant", results: []objectResult{{reason: ReasonCreated, compliant: true}}},
		{name: "noncompliant", results: []objectResult{{reason: ReasonNotFound}, {reason: ReasonFoundNoMatch}}},
		{name: "nothing selected", results: []objectResult{{compliant: true, message: "No objects of kind ConfigMap were matched"}}},
		{name: "template error", results: []objectResult{{reason: ReasonDecodeError, message: "Decoding error"}}, want: true},
		{name: "API error", results: []objectResult{{reason: ReasonCreated, compliant: true},
			{reason: ReasonUpdateError, message: "cannot be updated"}}, want: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(failed([]templateOutcome{{results: tt.results}})).To(Equal(tt.want))
		})
	}
}

// TestPruneUnlisted removes and renames object templates of enforced
// policies and checks which objects go: under DeleteIfCreated those the
// policy created, under DeleteAll those it listed, under None nothing.
func TestPruneUnlisted(t *testing.T) {
	for _, tt := range []struct {
		behavior               policyv1.PruneObjectBehavior
		wantCreated, wantFound bool
	}{
		{behavior: policyv1.PruneNone, wantCreated: true, wantFound: true},
		{behavior: policyv1.PruneDeleteIfCreated, wantCreated: false, wantFound: true},
		{behavior: policyv1.PruneDeleteAll, wantCreated: false, wantFound: false},
	} {
		t.Run(string(tt.behavior), func(t *testing.T) {
			f := newFixture(t)
			f.object(&corev1.ConfigMap{}, `{metadata: {name: found}, data: {k: v}}`)
			f.policy(`
metadata: {name: prune}
spec:
  remediationAction: enforce
  pruneObjectBehavior: ` + string(tt.behavior) + `
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: created, namespace: $NS}, data: {k: v}}
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: found, namespace: $NS}, data: {k: v}}
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: old-name, namespace: $NS}, data: {k: v}}`)
			f.g.Eventually(f.status("prune"), eventually, poll).Should(And(
				HaveField("ComplianceState", policyv1.Compliant), HaveField("RelatedObjects", HaveLen(3))))

			f.updateSpec("prune", func(s *policyv1.ConfigurationPolicySpec) {
				s.ObjectTemplates = []policyv1.ObjectTemplate{{ComplianceType: policyv1.MustHave,
					ObjectDefinition: runtime.RawExtension{Raw: []byte(`{"apiVersion": "v1", "kind": "ConfigMap", ` +
						`"metadata": {"name": "new-name", "namespace": "` + f.ns + `"}, "data": {"k": "v"}}`)}}}
			})
			f.g.Eventually(f.configMap(f.ns, "new-name"), eventually, poll).ShouldNot(BeNil())
			f.g.Eventually(f.status("prune"), eventually, poll).Should(HaveField("RelatedObjects", HaveLen(1)))
			f.g.Eventually(func(g Gomega) bool { return f.configMap(f.ns, "old-name")(g) != nil },
				eventually, poll).Should(Equal(tt.wantCreated), "renamed")
			f.g.Eventually(func(g Gomega) bool { return f.configMap(f.ns, "created")(g) != nil },
				eventually, poll).Should(Equal(tt.wantCreated), "created")
			f.g.Consistently(func(g Gomega) bool { return f.configMap(f.ns, "found")(g) != nil },
				quiet, poll).Should(Equal(tt.wantFound), "found")
		})
	}
}

// TestPruneNeverOnError breaks the template of an enforced DeleteAll policy
// and checks that its object stays, and stays listed, until a template
// that evaluates no longer lists it.
func TestPruneNeverOnError(t *testing.T) {
	f := newFixture(t)
	f.policy(`
metadata: {name: careful}
spec:
  remediationAction: enforce
  pruneObjectBehavior: DeleteAll
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: precious, namespace: $NS}, data: {k: v}}`)
	f.g.Eventually(f.message("careful"), eventually, poll).Should(HavePrefix("Compliant: "))

	for _, broken := range []string{
		`{"kind": "ConfigMap", "metadata": {"name": "precious2", "namespace": "` + f.ns + `"}}`,  // no apiVersion
		`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "precious2"}}`,           // no namespace
		`{"apiVersion": "canopy.test/v1", "kind": "Nothing", "metadata": {"name": "precious2"}}`, // unknown kind
	} {
		f.updateSpec("careful", func(s *policyv1.ConfigurationPolicySpec) {
			s.ObjectTemplates[0].ObjectDefinition = runtime.RawExtension{Raw: []byte(broken)}
		})
		f.g.Eventually(f.message("careful"), eventually, poll).Should(HavePrefix("NonCompliant: "), broken)
		f.g.Consistently(f.configMap(f.ns, "precious"), quiet, poll).ShouldNot(BeNil(), broken)
		f.g.Expect(f.status("careful")(f.g).RelatedObjects).To(ContainElement(
			HaveField("Object.Metadata.Name", "precious")), "still listed, to be pruned later")
	}

	f.updateSpec("careful", func(s *policyv1.ConfigurationPolicySpec) {
		s.ObjectTemplates[0].ObjectDefinition = runtime.RawExtension{Raw: []byte(`{"apiVersion": "v1", "kind": "ConfigMap", ` +
			`"metadata": {"name": "replacement", "namespace": "` + f.ns + `"}}`)}
	})
	f.g.Eventually(f.configMap(f.ns, "precious"), eventually, poll).Should(BeNil())
	f.g.Expect(f.configMap(f.ns, "replacement")(f.g)).NotTo(BeNil())
}

// TestPruneNotUnderInform removes the template of an informing DeleteAll
// policy: nothing is deleted.
func TestPruneNotUnderInform(t *testing.T) {
	f := newFixture(t)
	f.object(&corev1.ConfigMap{}, `{metadata: {name: watched}, data: {k: v}}`)
	f.policy(`
metadata: {name: informer}
spec:
  remediationAction: inform
  pruneObjectBehavior: DeleteAll
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: watched, namespace: $NS}, data: {k: v}}`)
	f.g.Eventually(f.status("informer"), eventually, poll).Should(HaveField("RelatedObjects", HaveLen(1)))
	f.updateSpec("informer", func(s *policyv1.ConfigurationPolicySpec) {
		s.ObjectTemplates[0].ObjectDefinition = runtime.RawExtension{Raw: []byte(`{"apiVersion": "v1", "kind": "ConfigMap", ` +
			`"metadata": {"name": "other", "namespace": "` + f.ns + `"}}`)}
	})
	f.g.Eventually(f.status("informer"), eventually, poll).Should(HaveField("RelatedObjects",
		ConsistOf(HaveField("Object.Metadata.Name", "other"))))
	f.g.Consistently(f.configMap(f.ns, "watched"), quiet, poll).ShouldNot(BeNil())
}

// TestPruneWaitsForHeldObjects deletes an enforced DeleteAll policy whose
// object a finalizer of its own holds: the policy stays, Terminating, with
// OCM's message naming the object, until the finalizer goes; then the
// policy goes too, at once (the object is watched).
func TestPruneWaitsForHeldObjects(t *testing.T) {
	f := newFixture(t)
	f.policy(`
metadata: {name: holder}
spec:
  remediationAction: enforce
  pruneObjectBehavior: DeleteAll
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: held, namespace: $NS, finalizers: [canopy.test/hold]}, data: {k: v}}`)
	f.g.Eventually(f.message("holder"), eventually, poll).Should(HavePrefix("Compliant: "))

	policy := &policyv1.ConfigurationPolicy{}
	key := types.NamespacedName{Namespace: f.ns, Name: "holder"}
	f.g.Expect(f.c.Get(t.Context(), key, policy)).To(Succeed())
	f.g.Expect(f.c.Delete(t.Context(), policy)).To(Succeed())
	f.g.Eventually(f.status("holder"), eventually, poll).Should(And(
		HaveField("ComplianceState", policyv1.Terminating),
		HaveField("CompliancyDetails", ContainElement(HaveField("Conditions", ContainElement(HaveField("Message",
			`Failed to delete objects: /v1, Kind=ConfigMap "held" in namespace `+f.ns)))))))
	f.g.Consistently(func(g Gomega) error { return f.c.Get(t.Context(), key, &policyv1.ConfigurationPolicy{}) },
		quiet, poll).Should(Succeed(), "the policy waits for its object")

	cm := &corev1.ConfigMap{}
	f.g.Expect(f.c.Get(t.Context(), types.NamespacedName{Namespace: f.ns, Name: "held"}, cm)).To(Succeed())
	f.g.Expect(cm.DeletionTimestamp).NotTo(BeNil())
	cm.Finalizers = nil
	f.g.Expect(f.c.Update(t.Context(), cm)).To(Succeed())
	f.g.Eventually(func() bool {
		return apierrors.IsNotFound(f.c.Get(t.Context(), key, &policyv1.ConfigurationPolicy{}))
	}, eventually, poll).Should(BeTrue(), "the policy goes once its object is gone")
}
