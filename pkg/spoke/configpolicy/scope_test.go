package configpolicy

import (
	"context"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// namespaces creates namespaces named after the test's, with labels, and
// deletes them when the test ends.
func (f *fixture) namespaces(labels map[string]map[string]string) {
	f.t.Helper()
	for suffix, l := range labels {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns + "-" + suffix, Labels: l}}
		f.g.Expect(f.c.Create(f.t.Context(), ns)).To(Succeed())
		f.t.Cleanup(func() { _ = f.c.Delete(context.Background(), ns) })
	}
}

// TestNamespaceSelector creates an object in each namespace the selector
// chooses, including one that comes to match later.
func TestNamespaceSelector(t *testing.T) {
	f := newFixture(t)
	f.namespaces(map[string]map[string]string{
		"a": {"env": "prod"}, "b": {"env": "dev"}, "c": {"env": "prod"}, "d": {"env": "prod"},
	})
	f.policy(`
metadata: {name: spread}
spec:
  remediationAction: enforce
  namespaceSelector:
    include: ["$NS-*"]
    exclude: ["$NS-c"]
    matchLabels: {env: prod}
    matchExpressions: [{key: env, operator: NotIn, values: [test]}]
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: spread}, data: {k: v}}`)
	f.g.Eventually(f.message("spread"), eventually, poll).Should(Equal(fmt.Sprintf(
		"Compliant: configmaps [spread] found as specified in namespaces: %[1]s-a, %[1]s-d", f.ns)))
	for suffix, want := range map[string]bool{"a": true, "b": false, "c": false, "d": true} {
		f.g.Expect(f.configMap(f.ns+"-"+suffix, "spread")(f.g) != nil).To(Equal(want), suffix)
	}

	b := &corev1.Namespace{}
	f.g.Expect(f.c.Get(t.Context(), types.NamespacedName{Name: f.ns + "-b"}, b)).To(Succeed())
	orig := b.DeepCopy()
	b.Labels["env"] = "prod"
	f.g.Expect(f.c.Patch(t.Context(), b, client.MergeFrom(orig))).To(Succeed())
	f.g.Eventually(f.configMap(f.ns+"-b", "spread"), eventually, poll).Should(Equal(map[string]string{"k": "v"}))
	f.g.Eventually(f.message("spread"), eventually, poll).Should(Equal(fmt.Sprintf(
		"Compliant: configmaps [spread] found as specified in namespaces: %[1]s-a, %[1]s-b, %[1]s-d", f.ns)))
}

// TestNamespaceSelectorUnderLongInterval: a namespace that comes to match
// the selector of a policy evaluated once an hour is evaluated at once, and
// OCM's PolicyUpdate event on the policy says the new status; a namespace
// that does not match changes nothing.
func TestNamespaceSelectorUnderLongInterval(t *testing.T) {
	f := newFixture(t)
	f.namespaces(map[string]map[string]string{"a": nil})
	f.policy(`
metadata: {name: hourly}
spec:
  remediationAction: inform
  evaluationInterval: {compliant: 1h, noncompliant: 1h}
  namespaceSelector: {include: ["$NS-*"]}
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: wanted}}`)
	f.g.Eventually(f.message("hourly"), eventually, poll).Should(Equal(
		fmt.Sprintf("NonCompliant: configmaps [wanted] not found in namespace %s-a", f.ns)))

	other := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns + "x"}} // matches no pattern
	f.g.Expect(f.c.Create(t.Context(), other)).To(Succeed())
	t.Cleanup(func() { _ = f.c.Delete(context.Background(), other) })
	f.namespaces(map[string]map[string]string{"b": nil})
	f.g.Eventually(f.message("hourly"), eventually, poll).Should(Equal(
		fmt.Sprintf("NonCompliant: configmaps [wanted] not found in namespaces: %[1]s-a, %[1]s-b", f.ns)))

	var events corev1.EventList
	f.g.Eventually(func(g Gomega) []string {
		g.Expect(f.c.List(t.Context(), &events, client.InNamespace(f.ns))).To(Succeed())
		var msgs []string
		for _, e := range events.Items {
			if e.InvolvedObject.Name == "hourly" && e.Reason == "PolicyUpdate" {
				msgs = append(msgs, e.Message)
			}
		}
		return msgs
	}, eventually, poll).Should(ContainElement(fmt.Sprintf(
		"Policy status is NonCompliant: configmaps [wanted] not found in namespaces: %[1]s-a, %[1]s-b", f.ns)))
}

// TestPrune deletes a policy under each pruneObjectBehavior and checks
// which of its objects go with it: one it created, one it found.
func TestPrune(t *testing.T) {
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
			p := f.policy(`
metadata: {name: prune}
spec:
  remediationAction: enforce
  pruneObjectBehavior: ` + string(tt.behavior) + `
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: created, namespace: $NS}, data: {k: v}}
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: found, namespace: $NS}, data: {k: v}}`)
			f.g.Eventually(f.status("prune"), eventually, poll).Should(And(
				HaveField("ComplianceState", policyv1.Compliant), HaveField("RelatedObjects", HaveLen(2))))
			cp := &policyv1.ConfigurationPolicy{}
			f.g.Expect(f.c.Get(t.Context(), client.ObjectKeyFromObject(p), cp)).To(Succeed())
			f.g.Expect(cp.Finalizers).To(Equal(finalizersFor(tt.behavior)))

			f.g.Expect(f.c.Delete(t.Context(), cp)).To(Succeed())
			f.g.Eventually(func() error {
				return f.c.Get(t.Context(), client.ObjectKeyFromObject(p), cp)
			}, eventually, poll).Should(MatchError(ContainSubstring("not found")))
			f.g.Expect(f.configMap(f.ns, "created")(f.g) != nil).To(Equal(tt.wantCreated), "created")
			f.g.Expect(f.configMap(f.ns, "found")(f.g) != nil).To(Equal(tt.wantFound), "found")
		})
	}
}

func finalizersFor(b policyv1.PruneObjectBehavior) []string {
	if b == policyv1.PruneNone {
		return nil
	}
	return []string{PruneFinalizer}
}

// TestCRDAppearsLater evaluates a policy whose kind is not served yet, and
// again when its CRD is installed.
func TestCRDAppearsLater(t *testing.T) {
	f := newFixture(t)
	group := strings.TrimPrefix(f.ns, "testcrdappearslater-") + ".canopy.test"
	f.policy(`
metadata: {name: widget}
spec:
  remediationAction: enforce
  object-templates:
  - complianceType: musthave
    objectDefinition:
      apiVersion: ` + group + `/v1
      kind: Widget
      metadata: {name: w, namespace: $NS}
      spec: {size: 3}`)
	f.g.Eventually(f.message("widget"), eventually, poll).Should(Equal("NonCompliant: couldn't find mapping resource " +
		"with kind Widget in API version " + group + "/v1, please check if you have CRD deployed"))

	f.g.Expect(f.c.Create(t.Context(), widgetCRD(group))).To(Succeed())
	t.Cleanup(func() { _ = f.c.Delete(t.Context(), widgetCRD(group)) })
	f.g.Eventually(f.message("widget"), eventually, poll).Should(Equal(
		"Compliant: widgets [w] found as specified in namespace " + f.ns))
	w := &unstructured.Unstructured{}
	w.SetAPIVersion(group + "/v1")
	w.SetKind("Widget")
	f.g.Expect(f.c.Get(t.Context(), types.NamespacedName{Namespace: f.ns, Name: "w"}, w)).To(Succeed())
	f.g.Expect(w.Object["spec"]).To(Equal(map[string]any{"size": int64(3)}))
}

func widgetCRD(group string) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptrTo(true),
				}},
			}},
		},
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestEvaluationInterval checks "never" once compliant, and a duration
// without watches.
func TestEvaluationInterval(t *testing.T) {
	f := newFixture(t)
	f.object(&corev1.ConfigMap{}, `{metadata: {name: never}, data: {k: v}}`)
	f.object(&corev1.ConfigMap{}, `{metadata: {name: periodic}, data: {k: v}}`)
	for _, name := range []string{"never", "periodic"} {
		interval := map[string]string{"never": "{compliant: never}", "periodic": "{compliant: 1s, noncompliant: 1s}"}[name]
		f.policy(`
metadata: {name: ` + name + `}
spec:
  evaluationInterval: ` + interval + `
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: ` + name + `, namespace: $NS}, data: {k: v}}`)
		f.g.Eventually(f.status(name), eventually, poll).Should(HaveField("ComplianceState", policyv1.Compliant))
	}
	neverBefore := f.status("never")(f.g)
	f.patchConfigMap("never", map[string]string{"k": "changed"})
	f.patchConfigMap("periodic", map[string]string{"k": "changed"})
	f.g.Eventually(f.message("periodic"), eventually, poll).Should(Equal(
		"NonCompliant: configmaps [periodic] found but not as specified in namespace " + f.ns))
	f.g.Consistently(f.status("never"), quiet, poll).Should(Equal(neverBefore))
}
