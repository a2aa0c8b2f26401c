package syncer

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
)

const livePolicy = `
metadata: {name: live}
spec:
  remediationAction: enforce
  propagation:
    kinds: [{kind: ConfigMap}]
    labelKeys: ["team"]
    annotationKeys: ["example.com/*"]
`

func configMap(ns, name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

// data returns a function that gets the data of a ConfigMap, nil when it
// does not exist or is being deleted.
func (f *fixture) data(ns, name string) func(Gomega) map[string]string {
	return func(g Gomega) map[string]string {
		cm := configMap(ns, name)
		if !f.exists(cm)(g) {
			return nil
		}
		return cm.Data
	}
}

// TestLivePropagation (docs/api/hierarchy-v1alpha1.md, "Live propagation"): SubNamespaces make a tree under a
// root namespace; propagate=update copies follow their source down two
// levels and go with it; propagate=create copies are made once; labels and
// annotations propagate by key pattern; a template namespace feeds the
// namespaces that name it, until one leaves.
func TestLivePropagation(t *testing.T) {
	f := newFixture(t)
	f.policy(livePolicy)
	f.object(&corev1.Namespace{}, `{metadata: {name: root-$S, labels: {hierarchy.canopy.io/type: root, team: blue, other: x}, annotations: {example.com/owner: me}}}`)
	f.object(&corev1.ConfigMap{}, `{metadata: {name: settings, namespace: root-$S, annotations: {hierarchy.canopy.io/propagate: update}}, data: {color: blue}}`)
	f.object(&corev1.ConfigMap{}, `{metadata: {name: seed, namespace: root-$S, annotations: {hierarchy.canopy.io/propagate: create}}, data: {v: "1"}}`)
	f.object(&corev1.ConfigMap{}, `{metadata: {name: local, namespace: root-$S}, data: {v: "1"}}`)
	f.object(&hierarchyv1alpha1.SubNamespace{}, `{metadata: {name: child-$S, namespace: root-$S}}`)
	f.g.Eventually(f.ready("root-$S", "child-$S"), eventually, poll).Should(Equal(ReasonCreated))
	f.object(&hierarchyv1alpha1.SubNamespace{}, `{metadata: {name: grand-$S, namespace: child-$S}}`)
	f.g.Eventually(f.ready("child-$S", "grand-$S"), eventually, poll).Should(Equal(ReasonCreated))

	for _, ns := range []string{"child-$S", "grand-$S"} {
		f.g.Eventually(f.data(ns, "settings"), eventually, poll).Should(Equal(map[string]string{"color": "blue"}), ns)
		f.g.Eventually(f.data(ns, "seed"), eventually, poll).Should(Equal(map[string]string{"v": "1"}), ns)
		f.g.Expect(f.data(ns, "local")(f.g)).To(BeNil())
		copied := configMap(ns, "settings")
		f.g.Expect(f.exists(copied)(f.g)).To(BeTrue())
		f.g.Expect(copied.Labels).To(HaveKeyWithValue(hierarchyv1alpha1.ManagedByLabel, "canopy"))
		namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		f.g.Eventually(func(g Gomega) map[string]string {
			g.Expect(f.exists(namespace)(g)).To(BeTrue())
			return namespace.Labels
		}, eventually, poll).Should(HaveKeyWithValue("team", "blue"))
		f.g.Expect(namespace.Labels).NotTo(HaveKey("other"))
		f.g.Expect(namespace.Annotations).To(HaveKeyWithValue("example.com/owner", "me"))
	}
	f.g.Expect(f.annotation("child-$S", "settings", hierarchyv1alpha1.FromAnnotation)).To(Equal(f.expand("root-$S")))
	f.g.Expect(f.annotation("grand-$S", "settings", hierarchyv1alpha1.FromAnnotation)).To(Equal(f.expand("child-$S")))

	// update: copies follow; create: copies are left as they are
	f.setData("root-$S", "settings", map[string]string{"color": "red"})
	f.setData("root-$S", "seed", map[string]string{"v": "2"})
	f.g.Eventually(f.data("grand-$S", "settings"), eventually, poll).Should(Equal(map[string]string{"color": "red"}))
	f.g.Expect(f.data("grand-$S", "seed")(f.g)).To(Equal(map[string]string{"v": "1"}))

	// a hand edit of an update copy is restored
	f.setData("child-$S", "settings", map[string]string{"color": "green"})
	f.g.Eventually(f.data("child-$S", "settings"), eventually, poll).Should(Equal(map[string]string{"color": "red"}))

	// the source goes → its update copies go, all the way down
	f.g.Expect(f.c.Delete(t.Context(), configMap(f.expand("root-$S"), "settings"))).To(Succeed())
	f.g.Eventually(f.data("child-$S", "settings"), eventually, poll).Should(BeNil())
	f.g.Eventually(f.data("grand-$S", "settings"), eventually, poll).Should(BeNil())
	f.g.Expect(f.data("grand-$S", "seed")(f.g)).NotTo(BeNil(), "create copies stay")

	// propagate-generated: what a marked owner controls propagates too
	owner := f.object(&corev1.ConfigMap{}, `{metadata: {name: owner, namespace: root-$S, annotations: {hierarchy.canopy.io/propagate-generated: update}}}`)
	generated := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "generated", Namespace: f.expand("root-$S"),
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: owner.GetUID(), Controller: ptr.To(true)}}},
		Data: map[string]string{"made": "by-owner"}}
	f.g.Expect(f.c.Create(t.Context(), generated)).To(Succeed())
	f.g.Eventually(f.data("grand-$S", "generated"), eventually, poll).Should(Equal(map[string]string{"made": "by-owner"}))
	f.g.Expect(f.data("child-$S", "owner")(f.g)).To(BeNil())
}

// TestTemplateNamespace: a namespace naming a template gets its copies, and
// loses the update copies when it stops naming it (moved namespaces).
func TestTemplateNamespace(t *testing.T) {
	f := newFixture(t)
	f.policy(livePolicy)
	f.object(&corev1.Namespace{}, `{metadata: {name: tmpl-$S, labels: {hierarchy.canopy.io/type: template, team: green}}}`)
	f.object(&corev1.ConfigMap{}, `{metadata: {name: limits, namespace: tmpl-$S, annotations: {hierarchy.canopy.io/propagate: update}}, data: {cpu: "1"}}`)
	f.object(&corev1.Namespace{}, `{metadata: {name: app-$S, labels: {hierarchy.canopy.io/template: tmpl-$S}}}`)
	f.g.Eventually(f.data("app-$S", "limits"), eventually, poll).Should(Equal(map[string]string{"cpu": "1"}))
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app-$S"}}
	f.g.Eventually(func(g Gomega) map[string]string {
		g.Expect(f.exists(ns)(g)).To(BeTrue())
		return ns.Labels
	}, eventually, poll).Should(HaveKeyWithValue("team", "green"))

	orig := ns.DeepCopy()
	delete(ns.Labels, hierarchyv1alpha1.TemplateLabel)
	f.g.Expect(f.c.Patch(t.Context(), ns, client.MergeFrom(orig))).To(Succeed())
	f.g.Eventually(f.data("app-$S", "limits"), eventually, poll).Should(BeNil())
}

// TestSubNamespaceLifecycle: a SubNamespace needs a root or sub-namespace,
// creates its child, refuses a namespace of another parent, and deletes
// only its own child.
func TestSubNamespaceLifecycle(t *testing.T) {
	f := newFixture(t)
	f.object(&corev1.Namespace{}, `{metadata: {name: plain-$S}}`)
	f.object(&hierarchyv1alpha1.SubNamespace{}, `{metadata: {name: nope-$S, namespace: plain-$S}}`)
	f.g.Eventually(f.ready("plain-$S", "nope-$S"), eventually, poll).Should(Equal(ReasonNotInTree))

	f.object(&corev1.Namespace{}, `{metadata: {name: root-$S, labels: {hierarchy.canopy.io/type: root}}}`)
	f.object(&hierarchyv1alpha1.SubNamespace{}, `{metadata: {name: team-$S, namespace: root-$S}, spec: {labels: {team: a}}}`)
	f.g.Eventually(f.ready("root-$S", "team-$S"), eventually, poll).Should(Equal(ReasonCreated))
	child := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-$S"}}
	f.g.Expect(f.exists(child)(f.g)).To(BeTrue())
	f.g.Expect(child.Labels).To(HaveKeyWithValue(hierarchyv1alpha1.ParentLabel, f.expand("root-$S")))
	f.g.Expect(child.Labels).To(HaveKeyWithValue("team", "a"))

	f.object(&corev1.Namespace{}, `{metadata: {name: taken-$S}}`)
	f.object(&hierarchyv1alpha1.SubNamespace{}, `{metadata: {name: taken-$S, namespace: root-$S}}`)
	f.g.Eventually(f.ready("root-$S", "taken-$S"), eventually, poll).Should(Equal(ReasonConflict))

	// deleting the SubNamespaces: its own child goes (Terminating in envtest),
	// the other parent's namespace stays
	for _, name := range []string{"team-$S", "taken-$S"} {
		sub := &hierarchyv1alpha1.SubNamespace{ObjectMeta: metav1.ObjectMeta{Namespace: f.expand("root-$S"), Name: f.expand(name)}}
		f.g.Expect(f.c.Delete(t.Context(), sub)).To(Succeed())
		f.g.Eventually(f.exists(sub), eventually, poll).Should(BeFalse())
	}
	f.g.Eventually(f.exists(child), eventually, poll).Should(BeFalse())
	f.g.Expect(f.c.Get(t.Context(), types.NamespacedName{Name: f.expand("team-$S")}, child)).To(Succeed())
	f.g.Expect(child.DeletionTimestamp).NotTo(BeNil())
	f.g.Expect(f.exists(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "taken-$S"}})(f.g)).To(BeTrue())
}

// TestOrphanCleanupAfterRestart: an update copy whose source was deleted
// while the agent was down, and a ClusterRole removed from its policy
// meanwhile, are deleted when it starts again: the labels are the memory.
// It runs its own API server, since it stops its agent.
func TestOrphanCleanupAfterRestart(t *testing.T) {
	t.Parallel()
	suite.Get(t) // the logger
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cp, err := controlplane.Start(ctx, "restart")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Error(err)
		}
	})
	stop, err := startAgent(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	f := fixtureOn(t, cp.Client)
	f.policy(livePolicy)
	f.policy(`{metadata: {name: cluster}, spec: {remediationAction: enforce, clusterResources: [` + quotaViewer + `]}}`)
	f.object(&corev1.Namespace{}, `{metadata: {name: root, labels: {hierarchy.canopy.io/type: root}}}`)
	f.object(&corev1.ConfigMap{}, `{metadata: {name: settings, namespace: root, annotations: {hierarchy.canopy.io/propagate: update}}, data: {a: b}}`)
	f.object(&corev1.Namespace{}, `{metadata: {name: child, labels: {hierarchy.canopy.io/parent: root}}}`)
	f.g.Eventually(f.data("child", "settings"), eventually, poll).ShouldNot(BeNil())
	f.g.Eventually(f.exists(clusterRole("quota-viewer")), eventually, poll).Should(BeTrue())

	// while the agent is down, the source goes, and quota-viewer is removed
	// from the policy
	f.g.Expect(stop()).To(Succeed())
	f.g.Expect(f.c.Delete(t.Context(), configMap("root", "settings"))).To(Succeed())
	f.updateSpec("cluster", `{spec: {remediationAction: enforce}}`)
	f.g.Expect(f.data("child", "settings")(f.g)).NotTo(BeNil(), "the agent is down")

	stop, err = startAgent(cp.Config)
	f.g.Expect(err).NotTo(HaveOccurred())
	defer func() { f.g.Expect(stop()).To(Succeed()) }()
	f.g.Eventually(f.data("child", "settings"), eventually, poll).Should(BeNil())
	f.g.Eventually(f.exists(clusterRole("quota-viewer")), eventually, poll).Should(BeFalse())
}

const quotaViewer = `{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: quota-viewer}, rules: [{apiGroups: [""], resources: [resourcequotas], verbs: [get]}]}`

// ready returns a function that gets the Ready reason of a SubNamespace.
func (f *fixture) ready(ns, name string) func(Gomega) string {
	return func(g Gomega) string {
		sub := &hierarchyv1alpha1.SubNamespace{}
		g.Expect(f.c.Get(f.t.Context(), types.NamespacedName{Namespace: f.expand(ns), Name: f.expand(name)}, sub)).To(Succeed())
		if c := meta.FindStatusCondition(sub.Status.Conditions, ConditionReady); c != nil {
			return c.Reason
		}
		return ""
	}
}

func (f *fixture) annotation(ns, name, key string) string {
	cm := configMap(ns, name)
	f.g.Expect(f.exists(cm)(f.g)).To(BeTrue())
	return cm.Annotations[key]
}

func (f *fixture) setData(ns, name string, data map[string]string) {
	f.t.Helper()
	cm := configMap(ns, name)
	f.g.Expect(f.exists(cm)(f.g)).To(BeTrue())
	orig := cm.DeepCopy()
	cm.Data = data
	f.g.Expect(f.c.Patch(f.t.Context(), cm, client.MergeFrom(orig))).To(Succeed())
}
