package configpolicy

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// terminatingNamespace creates the namespace name and deletes it, with a
// ConfigMap whose finalizer holds it in Terminating until the test ends
// (whether or not a namespace controller runs).
func (f *fixture) terminatingNamespace(name string) {
	f.t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	f.g.Expect(f.c.Create(f.t.Context(), ns)).To(Succeed())
	hold := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "hold", Namespace: name, Finalizers: []string{"canopy.io/test-hold"}}}
	f.g.Expect(f.c.Create(f.t.Context(), hold)).To(Succeed())
	f.t.Cleanup(func() {
		_ = f.c.Patch(context.Background(), hold, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
	})
	f.g.Expect(f.c.Delete(f.t.Context(), ns)).To(Succeed())
	f.g.Eventually(func(g Gomega) *metav1.Time {
		g.Expect(f.c.Get(f.t.Context(), types.NamespacedName{Name: name}, ns)).To(Succeed())
		return ns.DeletionTimestamp
	}, eventually, poll).ShouldNot(BeNil())
}

// TestTerminatingInclusion: namespaceSelector.terminatingInclusion decides
// whether a terminating namespace is selected. Field, values and default
// are OCM's (config-policy-controller api/v1/configurationpolicy_types.go,
// Target.TerminatingInclusion; selection in pkg/common/namespace_selection.go,
// filter): IfMatch and Default (the controller's default, IfMatch) select
// it, Never does not.
func TestTerminatingInclusion(t *testing.T) {
	f := newFixture(t)
	f.namespaces(map[string]map[string]string{"live": nil})
	f.terminatingNamespace(f.ns + "-dying")
	policy := func(name, inclusion string) {
		field := ""
		if inclusion != "" {
			field = "terminatingInclusion: " + inclusion
		}
		f.policy(fmt.Sprintf(`
metadata: {name: %s}
spec:
  namespaceSelector:
    include: ["$NS-live", "$NS-dying"]
    %s
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: wanted}}`, name, field))
	}
	policy("unset", "")
	policy("ifmatch", "IfMatch")
	policy("never", "Never")
	both := fmt.Sprintf("NonCompliant: configmaps [wanted] not found in namespaces: %[1]s-dying, %[1]s-live", f.ns)
	f.g.Eventually(f.message("unset"), eventually, poll).Should(Equal(both))
	f.g.Eventually(f.message("ifmatch"), eventually, poll).Should(Equal(both))
	f.g.Eventually(f.message("never"), eventually, poll).Should(Equal(
		fmt.Sprintf("NonCompliant: configmaps [wanted] not found in namespace %s-live", f.ns)))

	// The API server defaults the field to Default, as OCM's CRD does.
	p := &policyv1.ConfigurationPolicy{}
	f.g.Expect(f.c.Get(t.Context(), types.NamespacedName{Namespace: f.ns, Name: "unset"}, p)).To(Succeed())
	f.g.Expect(p.Spec.NamespaceSelector.TerminatingInclusion).To(Equal(policyv1.TerminatingDefault))
}
