package templatesync_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/compliance"
	"github.com/canopy-policy/canopy/pkg/spoke/configpolicy"
	"github.com/canopy-policy/canopy/pkg/spoke/templatesync"
	"github.com/canopy-policy/canopy/pkg/templating"
)

// enforcing runs the real ConfigurationPolicy evaluator, which prunes.
func enforcing(mgr ctrl.Manager, rec *compliance.Recorder) error {
	r := &configpolicy.Reconciler{ManagedClient: mgr.GetClient(), ManagedReader: mgr.GetAPIReader(), Recorder: rec}
	return r.SetupWithManager(mgr)
}

// keptConfigMap is an enforced ConfigurationPolicy that creates the
// ConfigMap kept in ns and deletes it (DeleteAll) when it is deleted; data
// is the ConfigMap's value of "a".
func keptConfigMap(ns, data string, annotations map[string]any) tmpl {
	return tmpl{kind: "ConfigurationPolicy", name: "prune-cp", annotations: annotations, spec: map[string]any{
		"remediationAction":   "enforce",
		"pruneObjectBehavior": "DeleteAll",
		"object-templates": []any{map[string]any{
			"complianceType": "musthave",
			"objectDefinition": map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": "kept", "namespace": ns},
				"data":     map[string]any{"a": data},
			},
		}},
	}}
}

// A template the hub could not resolve is not applied: its existing
// ConfigurationPolicy is deleted without pruning the objects it manages,
// the error is reported once as OCM reports it, and the template comes
// back when the hub resolves it again.
func TestHubTemplateErrorDeletesWithoutPruning(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	c := newClusterWith(t, enforcing)
	c.create(t, c.replica("huberr", nil, keptConfigMap(c.ns, "b", nil)))
	cm := &corev1.ConfigMap{}
	cmKey := client.ObjectKey{Namespace: c.ns, Name: "kept"}
	g.Eventually(func() error { return c.managed.Get(ctx, cmKey, cm) }).WithContext(ctx).Should(Succeed())
	g.Eventually(func(g Gomega) { // the policy would prune: finalizer set, the ConfigMap related
		cp := &policyv1.ConfigurationPolicy{}
		g.Expect(c.managed.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: "prune-cp"}, cp)).To(Succeed())
		g.Expect(cp.Finalizers).To(ContainElement(configpolicy.PruneFinalizer))
		g.Expect(cp.Status.RelatedObjects).NotTo(BeEmpty())
	}).WithContext(ctx).Should(Succeed())

	const hubErr = `template: tmpl:1:13: executing "tmpl" at <fromConfigMap "" "missing" "a">: ` +
		`error calling fromConfigMap: configmaps "missing" not found`
	failed := keptConfigMap(c.ns, `{{hub fromConfigMap "" "missing" "a" hub}}`,
		map[string]any{templating.HubTemplatesErrorAnnotation: hubErr})
	c.setTemplates(t, "huberr", failed)
	g.Eventually(c.templateExists(ctx, "prune-cp")).WithContext(ctx).Should(BeFalse())
	g.Expect(c.managed.Get(ctx, cmKey, &corev1.ConfigMap{})).To(Succeed(), "the ConfigMap was pruned")
	want := "NonCompliant; " + templating.TemplateErrorPrefix + hubErr
	g.Eventually(c.hubStatus(ctx, "huberr")).WithContext(ctx).Should(SatisfyAll(
		WithTransform(compliant, Equal(policyv1.NonCompliant)),
		WithTransform(latestOf("prune-cp"), Equal(want))))
	g.Consistently(func(g Gomega) int { // no hot loop: one event, the template stays away
		g.Expect(c.templateExists(ctx, "prune-cp")()).To(BeFalse())
		return c.eventsWithMessage(ctx, g, want)
	}, 3*time.Second, 200*time.Millisecond).WithContext(ctx).Should(Equal(1))
	g.Expect(c.managed.Get(ctx, cmKey, &corev1.ConfigMap{})).To(Succeed(), "the ConfigMap was pruned")

	c.setTemplates(t, "huberr", keptConfigMap(c.ns, "c", nil))
	g.Eventually(c.hubStatus(ctx, "huberr")).WithContext(ctx).Should(SatisfyAll(
		WithTransform(compliant, Equal(policyv1.Compliant)),
		WithTransform(latestOf("prune-cp"), HavePrefix("Compliant;"))))
	g.Expect(c.managed.Get(ctx, cmKey, cm)).To(Succeed())
	g.Expect(cm.Data).To(HaveKeyWithValue("a", "c"))
}

// A template still holding a hub template without the hub's error (written
// by hand) is an error too, unless templates are disabled; a template's
// encryption IV reaches the object templatesync creates.
func TestUnresolvedHubTemplate(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	c := newCluster(t)
	literal := map[string]any{"remediationAction": "inform", "object-templates": []any{map[string]any{
		"complianceType": "musthave",
		"objectDefinition": map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x"},
			"data": map[string]any{"cluster": "{{hub .ManagedClusterName hub}}"},
		},
	}}}
	unresolved := tmpl{kind: "ConfigurationPolicy", name: "unresolved", spec: literal}
	disabled := tmpl{kind: "ConfigurationPolicy", name: "disabled", spec: literal,
		annotations: map[string]any{templating.DisableTemplatesAnnotation: "true"}}
	iv := cfgPolicy("with-iv")
	iv.annotations = map[string]any{templating.IVAnnotation: "7cbf5ZT6LJYEr8XMy/P9lg=="}
	c.create(t, c.replica("unresolved", nil, unresolved, disabled, iv))

	g.Eventually(c.hubStatus(ctx, "unresolved")).WithContext(ctx).Should(SatisfyAll(
		WithTransform(latestOf("unresolved"), Equal("NonCompliant; "+templating.TemplateErrorPrefix+templatesync.UnresolvedHubTemplates)),
		WithTransform(latestOf("disabled"), HavePrefix("Compliant;")),
		WithTransform(latestOf("with-iv"), HavePrefix("Compliant;"))))
	g.Expect(c.templateExists(ctx, "unresolved")()).To(BeFalse())
	cp := &policyv1.ConfigurationPolicy{}
	g.Expect(c.managed.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: "with-iv"}, cp)).To(Succeed())
	g.Expect(cp.Annotations).To(HaveKeyWithValue(templating.IVAnnotation, "7cbf5ZT6LJYEr8XMy/P9lg=="))
}

// eventsWithMessage counts the compliance events of c's namespace whose
// message is msg.
func (c *cluster) eventsWithMessage(ctx context.Context, g Gomega, msg string) int {
	events := &corev1.EventList{}
	g.Expect(c.managed.List(ctx, events, client.InNamespace(c.ns))).To(Succeed())
	n := 0
	for _, e := range events.Items {
		if e.Message == msg {
			n++
		}
	}
	return n
}
