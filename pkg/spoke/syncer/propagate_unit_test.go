package syncer

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
)

func TestPropagationOf(t *testing.T) {
	g := NewWithT(t)
	a := policy(t, `{metadata: {name: a}, spec: {remediationAction: enforce, propagation: {kinds: [{kind: Secret}, {kind: ConfigMap}], labelKeys: [team]}}}`)
	b := policy(t, `{metadata: {name: b}, spec: {remediationAction: enforce, propagation: {kinds: [{kind: Secret}], annotationKeys: ["example.com/*"]}}}`)
	got := propagationOf([]hierarchyv1alpha1.HierarchyPolicy{*a, *b, *policy(t, `{metadata: {name: c}}`),
		*policy(t, `{metadata: {name: inform}, spec: {remediationAction: inform, propagation: {kinds: [{kind: Role}]}}}`)})
	g.Expect(got).To(Equal(propagation{
		kinds:     []schema.GroupKind{{Kind: "ConfigMap"}, {Kind: "Secret"}},
		labelKeys: []string{"team"}, annotationKeys: []string{"example.com/*"},
	}))
}

func TestCopiesOf(t *testing.T) {
	g := NewWithT(t)
	sources := objs(t, []string{
		`{apiVersion: v1, kind: ConfigMap, metadata: {name: u, namespace: root, uid: x, resourceVersion: "9", labels: {a: b}, annotations: {hierarchy.canopy.io/propagate: update}}, data: {k: v}}`,
		`{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: root, annotations: {hierarchy.canopy.io/propagate: create}}}`,
		`{apiVersion: v1, kind: ConfigMap, metadata: {name: local, namespace: root}}`,
	})
	creates, updates := copiesOf(sources, "child", "root")
	g.Expect(keys(creates)).To(Equal([]string{"ConfigMap child/c"}))
	g.Expect(keys(updates)).To(Equal([]string{"ConfigMap child/u"}))
	g.Expect(updates[0].Object).To(Equal(map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"k": "v"},
		"metadata": map[string]any{"name": "u", "namespace": "child",
			"labels": map[string]any{"a": "b", hierarchyv1alpha1.ManagedByLabel: "canopy"},
			"annotations": map[string]any{hierarchyv1alpha1.PropagateAnnotation: "update",
				hierarchyv1alpha1.FromAnnotation: "root", hierarchyv1alpha1.SourceAnnotation: "propagated from namespace root"}},
	}))
}

func TestCopyMatching(t *testing.T) {
	g := NewWithT(t)
	into := map[string]string{"own": "1"}
	copyMatching(&into, map[string]string{"team": "a", "teamster": "b", "example.com/x": "c",
		hierarchyv1alpha1.TypeLabel: "root"}, []string{"team", "example.com/*", "hierarchy.canopy.io/*"})
	g.Expect(into).To(Equal(map[string]string{"own": "1", "team": "a", "example.com/x": "c"}))
}

func TestSelected(t *testing.T) {
	g := NewWithT(t)
	gen := hierarchyv1alpha1.Generator{Name: "g", NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"net": "r"}}}
	now := metav1.Now()
	all := []corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"net": "r"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "kube-system", Labels: map[string]string{"net": "r"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "gone", Labels: map[string]string{"net": "r"}, DeletionTimestamp: &now}},
	}
	g.Expect(selected(gen, all)).To(Equal([]string{"a"}))
	g.Expect(selected(hierarchyv1alpha1.Generator{Name: "all"}, all)).To(Equal([]string{"a", "b"}), "empty selects all but reserved")
}

func TestGenerated(t *testing.T) {
	g := NewWithT(t)
	tr := newTree(policy(t, `{metadata: {name: base, namespace: c1}}`))
	tmpl := obj(t, `{apiVersion: networking.k8s.io/v1, kind: NetworkPolicy, metadata: {name: default-deny}, spec: {podSelector: {}}}`)
	got := tr.generated(hierarchyv1alpha1.Generator{Name: "deny", Synchronize: true}, tmpl, []string{"a"})
	g.Expect(got).To(HaveLen(1))
	g.Expect(got[0].GetLabels()).To(Equal(map[string]string{hierarchyv1alpha1.ManagedByLabel: "canopy",
		hierarchyv1alpha1.PolicyLabel: "base", hierarchyv1alpha1.GeneratedByLabel: "base.deny"}))
	g.Expect(got[0].GetAnnotations()[hierarchyv1alpha1.SourceAnnotation]).To(Equal("HierarchyPolicy c1/base, generator deny (synchronize)"))
	g.Expect(tmpl.GetNamespace()).To(BeEmpty(), "the template is not changed")
}
