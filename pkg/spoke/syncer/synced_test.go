package syncer

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
)

// TestSyncedNamespaces: an outcome is reused until the namespace changes,
// as the next sync would find it; one from a sync during which it changed,
// one that deleted or failed, and one that did not list the kind of an
// object the policy applied earlier are not. An event showing an object as
// the sync saw or wrote it is no change.
func TestSyncedNamespaces(t *testing.T) {
	g := NewWithT(t)
	var s syncedNamespaces
	plan := treeKey{uid: "uid-1", generation: 1}
	read := observation{listed: map[schema.GroupKind]bool{{Kind: "ConfigMap"}: true}, seen: map[types.UID]string{"cm-1": "10"}}
	inSync := outcome{namespace: "a", declared: 2, applied: true,
		actions: []action{{op: opConflict, object: &unstructured.Unstructured{}}}}
	sync := func(plan treeKey, o outcome) {
		s.end("a", s.begin("a"), plan, o, read)
	}
	remembered := func(plan treeKey, owned ...*metav1.PartialObjectMetadata) bool {
		_, ok := s.lookup("a", plan, owned)
		return ok
	}

	g.Expect(remembered(plan)).To(BeFalse(), "nothing synced yet")
	sync(plan, inSync)
	o, ok := s.lookup("a", plan, nil)
	g.Expect(ok).To(BeTrue())
	g.Expect(o).To(Equal(inSync))
	_, ok = s.lookup("b", plan, nil)
	g.Expect(ok).To(BeFalse(), "another namespace")
	g.Expect(remembered(treeKey{uid: "uid-1", generation: 2})).To(BeFalse(), "another generation")

	configMap, secret := &metav1.PartialObjectMetadata{}, &metav1.PartialObjectMetadata{}
	configMap.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"})
	secret.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "Secret"})
	g.Expect(remembered(plan, configMap)).To(BeTrue(), "an object applied earlier, of a kind the sync listed")
	g.Expect(remembered(plan, configMap, secret)).To(BeFalse(), "an object applied earlier, of a kind the sync did not list")

	cm := &unstructured.Unstructured{}
	cm.SetUID("cm-1")
	cm.SetResourceVersion("10")
	s.observed("a", cm)
	g.Expect(remembered(plan)).To(BeTrue(), "an object as the sync saw it: no change (a watch listing again)")
	cm.SetResourceVersion("11")
	s.observed("a", cm)
	g.Expect(remembered(plan)).To(BeFalse(), "an object changed since the sync")

	sync(plan, inSync)
	other := &unstructured.Unstructured{}
	other.SetUID("cm-2")
	other.SetResourceVersion("10")
	s.observed("a", other)
	g.Expect(remembered(plan)).To(BeFalse(), "an object the sync did not see")

	sync(plan, inSync)
	s.changed("a")
	g.Expect(remembered(plan)).To(BeFalse(), "an object went")

	v := s.begin("a")
	s.changed("a") // during the sync
	s.end("a", v, plan, inSync, read)
	g.Expect(remembered(plan)).To(BeFalse(), "a sync that began before a change is not remembered")
	v2 := s.begin("a")
	g.Expect(v2).NotTo(Equal(v), "a namespace forgotten and synced again has a new version")
	s.end("a", v2, plan, inSync, read)

	v = s.begin("a")
	cm.SetResourceVersion("10")
	s.observed("a", cm) // during the sync: as it saw cm
	s.end("a", v, plan, inSync, read)
	g.Expect(remembered(plan)).To(BeTrue(), "an event during a sync showing what it saw is no change")
	v = s.begin("a")
	cm.SetResourceVersion("12")
	s.observed("a", cm) // during the sync: it may have read cm before
	s.end("a", v, plan, inSync, read)
	g.Expect(remembered(plan)).To(BeFalse(), "an event during a sync showing what it did not see")

	created := &unstructured.Unstructured{}
	created.SetKind("ConfigMap")
	wrote := outcome{namespace: "a", declared: 2, applied: true, actions: []action{
		{op: opCreate, object: created}, {op: opConflict, object: &unstructured.Unstructured{}}}}
	v = s.begin("a")
	cm.SetResourceVersion("13")
	s.observed("a", cm) // the echo of the sync's own write
	wroteRead := observation{listed: read.listed, seen: map[types.UID]string{"cm-1": "13"}}
	s.end("a", v, plan, wrote, wroteRead)
	o, ok = s.lookup("a", plan, nil)
	g.Expect(ok).To(BeTrue(), "a sync that created is remembered as the next would find the namespace")
	g.Expect(o.actions).To(Equal(wrote.actions[1:]), "without its create, with its conflict")
	g.Expect(o.declared).To(Equal(2))
	s.observed("a", cm)
	g.Expect(remembered(plan)).To(BeTrue(), "the echo of its own write after the sync")
	deleted := outcome{namespace: "a", applied: true, actions: []action{{op: opDelete, object: created}}}
	s.end("a", s.begin("a"), plan, deleted, wroteRead)
	g.Expect(remembered(plan)).To(BeFalse(), "a sync that deleted is not remembered")
	planned := wrote
	planned.applied = false // inform: planned, not written
	sync(plan, planned)
	o, ok = s.lookup("a", plan, nil)
	g.Expect(ok).To(BeTrue(), "under inform a plan writes nothing")
	g.Expect(o).To(Equal(planned))

	failed := inSync
	failed.failed.setWrite(0, context.Canceled)
	next := treeKey{uid: "uid-1", generation: 2}
	sync(next, failed)
	g.Expect(remembered(next)).To(BeFalse(), "a sync that failed is not remembered")
	sync(next, inSync)
	g.Expect(remembered(next)).To(BeTrue())
	g.Expect(remembered(plan)).To(BeFalse(), "a newer generation's outcome replaces the older one's")
}

// TestSyncReadsANamespaceOncePerChange: a sync that found the namespace as
// declared is not read again until the namespace changes; its outcome is
// the one reused.
func TestSyncReadsANamespaceOncePerChange(t *testing.T) {
	f := newFixture(t)
	p := f.policy(`
metadata: {name: once}
spec:
  remediationAction: inform
  nodes:
  - name: once-$S
    resources:
    - {apiVersion: v1, kind: ConfigMap, metadata: {name: settings}, data: {a: "1"}}
`)
	reads := &countingReader{Reader: f.c}
	r := &Reconciler{ManagedClient: f.c, ManagedReader: reads, mapper: f.c.RESTMapper()}
	t1 := newTree(p)
	ns := f.expand("once-$S")

	first := r.syncNamespace(t.Context(), t1, ns, nil, false)
	f.g.Expect(first.failed.all()).To(BeEmpty())
	f.g.Expect(first.open()).NotTo(BeEmpty(), "under inform, the namespace and its ConfigMap are planned")
	f.g.Expect(reads.n).To(BeNumerically(">", 0))
	n := reads.n

	again := r.syncNamespace(t.Context(), t1, ns, nil, false)
	f.g.Expect(reads.n).To(Equal(n), "nothing changed: nothing read")
	f.g.Expect(again).To(Equal(first))

	r.synced.changed(ns) // what the namespace's watch event does
	r.syncNamespace(t.Context(), t1, ns, nil, false)
	f.g.Expect(reads.n).To(BeNumerically(">", n), "after an event, read again")

	owned := &metav1.PartialObjectMetadata{}
	owned.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "Secret"})
	owned.SetNamespace(ns)
	owned.SetName("left-over")
	owned.SetLabels(map[string]string{hierarchyv1alpha1.PolicyLabel: p.Name})
	n = reads.n
	r.syncNamespace(t.Context(), t1, ns, []*metav1.PartialObjectMetadata{owned}, false)
	f.g.Expect(reads.n).To(BeNumerically(">", n), "an object applied earlier of a kind not listed: read again")
}

// countingReader counts the reads it passes on.
type countingReader struct {
	client.Reader
	n int
}

func (c *countingReader) Get(ctx context.Context, key types.NamespacedName, obj client.Object, opts ...client.GetOption) error {
	c.n++
	return c.Reader.Get(ctx, key, obj, opts...)
}

func (c *countingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.n++
	return c.Reader.List(ctx, list, opts...)
}
