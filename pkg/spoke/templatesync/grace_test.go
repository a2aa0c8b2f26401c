package templatesync_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/spoke/templatesync"
)

// TestPendingGrace: a template whose dependency exists but has not been
// evaluated yet reports nothing for the grace: when the dependency turns
// Compliant within it, the template is created and reports Compliant
// without a Pending first; when it does not, the template reports Pending
// once the grace is over. The dependencies are ConfigurationPolicies made
// by hand, which no evaluator reports on (they have no parent Policy).
func TestPendingGrace(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	c := newCluster(t)
	g.Expect(client.IgnoreAlreadyExists(c.managed.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.ns}}))).To(Succeed())
	deps := map[string]*unstructured.Unstructured{}
	for _, name := range []string{"dep-soon", "dep-never"} {
		deps[name] = &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": policyv1.GroupVersion.String(), "kind": "ConfigurationPolicy",
			"metadata": map[string]any{"namespace": c.ns, "name": name},
			"spec":     map[string]any{"remediationAction": "inform", "object-templates": []any{}},
		}}
		g.Expect(c.managed.Create(ctx, deps[name])).To(Succeed())
	}
	c.create(t, c.replica("soon", nil, cfgPolicy("soon-cfg", dep("ConfigurationPolicy", "dep-soon", policyv1.Compliant))))
	c.create(t, c.replica("never", nil, cfgPolicy("never-cfg", dep("ConfigurationPolicy", "dep-never", policyv1.Compliant))))

	g.Eventually(func(g Gomega) { c.localStatus(ctx, "never")(g) }).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(detail(c.localStatus(ctx, "never")(g), "never-cfg").History).To(BeEmpty())
	}, templatesync.DefaultPendingGrace/2, 200*time.Millisecond).Should(Succeed(), "nothing is reported within the grace")
	g.Expect(unstructured.SetNestedField(deps["dep-soon"].Object, string(policyv1.Compliant), "status", "compliant")).To(Succeed())
	g.Expect(c.managed.Status().Update(ctx, deps["dep-soon"])).To(Succeed())

	g.Eventually(c.templateExists(ctx, "soon-cfg")).Should(BeTrue())
	g.Eventually(func(g Gomega) {
		h := detail(c.hubStatus(ctx, "soon")(g), "soon-cfg").History
		g.Expect(h).To(HaveLen(1), "the dependant reported once, Compliant, and never Pending")
		g.Expect(h[0].Message).To(HavePrefix("Compliant"))
	}).Should(Succeed())
	g.Eventually(func(g Gomega) string { return latest(c.hubStatus(ctx, "never")(g), "never-cfg") }, 2*templatesync.DefaultPendingGrace).
		Should(Equal("Pending; Dependencies were not satisfied: 1 is still pending (ConfigurationPolicy dep-never); " +
			"ConfigurationPolicy dep-never: no status.compliant"))
}
