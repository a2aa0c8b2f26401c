package syncer

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/canopy-policy/canopy/pkg/hierarchy"
)

// syncCluster plans, and under enforce applies, the cluster-scoped objects
// of t: declared ones, and those it applied earlier (owned). Namespaces of
// the tree's nodes are left to their namespace's scope.
func (r *Reconciler) syncCluster(ctx context.Context, t *tree, desired []*unstructured.Unstructured, owned []*metav1.PartialObjectMetadata, enforce bool) outcome {
	o := outcome{declared: len(desired)}
	observed, err := r.getAll(ctx, desired)
	if err != nil {
		o.failed.read = err
		return o
	}
	for _, u := range metadataObjects(owned) {
		if _, isNode := t.Nodes[u.GetName()]; u.GetKind() == "Namespace" && isNode {
			continue
		}
		observed = append(observed, u)
	}
	o.actions = plan(desired, observed, rules{policy: t.Policy, holdDeletes: !t.Valid()})
	r.apply(ctx, &o, enforce)
	return o
}

// syncNamespace plans, and under enforce applies, the objects of t in
// namespace ns, unless a sync of the same plan found nothing to write there
// since ns last changed (synced.go): then it returns that sync's outcome.
func (r *Reconciler) syncNamespace(ctx context.Context, t *tree, ns string, owned []*metav1.PartialObjectMetadata, enforce bool) outcome {
	if enforce {
		defer r.namespaceLocks.lock(ns)()
	}
	if t.id == (treeKey{}) {
		o, _ := r.planNamespace(ctx, t, ns, owned, enforce)
		return o
	}
	// Note: t.id names the whole plan: the tree, its problems included
	// (policyTree), is the policy's spec at that generation.
	if o, ok := r.synced.lookup(ns, t.id, owned); ok {
		return o
	}
	version := r.synced.begin(ns)
	o, read := r.planNamespace(ctx, t, ns, owned, enforce)
	r.synced.end(ns, version, t.id, o, read)
	return o
}

// planNamespace plans, and under enforce applies, the objects of t in
// namespace ns: the Namespace itself first (so that the objects can be
// created in it), then the declared objects and managedKinds. It returns
// what it read.
func (r *Reconciler) planNamespace(ctx context.Context, t *tree, ns string, owned []*metav1.PartialObjectMetadata, enforce bool) (outcome, observation) {
	o := outcome{namespace: ns}
	read := observation{seen: map[types.UID]string{}}
	r2 := rules{policy: t.Policy, holdDeletes: !t.Valid(), strict: map[schema.GroupKind]bool{}}
	var desired []*unstructured.Unstructured
	if t.Manages(ns) {
		nsObj := t.NamespaceObject(ns)
		first := outcome{namespace: ns}
		observedNS, err := r.getAll(ctx, []*unstructured.Unstructured{nsObj})
		if err != nil {
			o.failed.read = err
			return o, read
		}
		read.saw(observedNS)
		first.actions = plan([]*unstructured.Unstructured{nsObj}, observedNS, r2)
		r.apply(ctx, &first, enforce)
		maps.Copy(read.seen, first.written)
		if first.failed.count() > 0 || (len(first.actions) > 0 && first.actions[0].op == opConflict) {
			first.declared = 1
			return first, read
		}
		desired, _ = t.ObjectsOf(ns)
		for gk := range t.strictKinds() {
			r2.strict[gk] = true
		}
		o.actions = first.actions
	}
	o.declared = len(desired)
	if t.Manages(ns) {
		o.declared++ // the Namespace
	}
	observed, listed, err := r.observe(ctx, ns, desired, r2.strict, metadataObjects(owned))
	if err != nil {
		o.failed.read = err
		return o, read
	}
	read.listed = listed
	read.saw(observed)
	rest := outcome{namespace: ns, actions: plan(desired, observed, r2)}
	r.apply(ctx, &rest, enforce)
	maps.Copy(read.seen, rest.written)
	offset := len(o.actions)
	o.actions = append(o.actions, rest.actions...)
	for i, err := range rest.failed.writes {
		o.failed.setWrite(i+offset, err)
	}
	o.applied = enforce
	return o, read
}

// strictKinds are the policy's managedKinds.
func (t *tree) strictKinds() map[schema.GroupKind]bool {
	out := map[schema.GroupKind]bool{}
	for _, mk := range t.Managed {
		out[schema.GroupKind{Group: mk.Group, Kind: mk.Kind}] = true
	}
	return out
}

// apply writes the changes of o's plan under enforce, recording failures.
// It leaves each action's object reduced to its kind and name, all that
// is read of it afterwards.
func (r *Reconciler) apply(ctx context.Context, o *outcome, enforce bool) {
	o.applied = enforce
	defer o.stubObjects()
	if !enforce {
		return
	}
	log := ctrl.LoggerFrom(ctx)
	for i, a := range o.actions {
		var err error
		obj := a.object.DeepCopy()
		switch a.op {
		case opCreate:
			err = r.ManagedClient.Create(ctx, obj)
		case opUpdate:
			err = r.ManagedClient.Update(ctx, obj) // in place, with optimistic locking
		case opDelete:
			err = client.IgnoreNotFound(r.ManagedClient.Delete(ctx, a.object,
				client.Preconditions{UID: ptrUID(a.object), ResourceVersion: ptrRV(a.object)}))
		default:
			continue
		}
		if err != nil {
			o.failed.setWrite(i, fmt.Errorf("%s %s: %w", a.op, keyOf(a.object), err))
			continue
		}
		if a.op != opDelete {
			if o.written == nil {
				o.written = map[types.UID]string{}
			}
			o.written[obj.GetUID()] = obj.GetResourceVersion()
		}
		log.Info("Synced", "op", a.op, "kind", a.object.GetKind(), "object", klog.KObj(a.object), "reason", a.reason)
	}
}

// stubObjects reduces the object of each of o's actions to its kind and
// name: the status, a dry run and the generators read no more of it once
// the plan is written. A policy's reconcile keeps the outcomes of every
// namespace until it writes the status: with whole objects it held every
// declared object of the cluster at once (make bench: syncer cold start).
func (o *outcome) stubObjects() {
	for i := range o.actions {
		if u := o.actions[i].object; u != nil {
			s := &unstructured.Unstructured{Object: map[string]any{}}
			s.SetAPIVersion(u.GetAPIVersion())
			s.SetKind(u.GetKind())
			s.SetNamespace(u.GetNamespace())
			s.SetName(u.GetName())
			o.actions[i].object = s
		}
	}
}

// getAll reads the objects named by desired that exist.
func (r *Reconciler) getAll(ctx context.Context, desired []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, d := range desired {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(d.GroupVersionKind())
		err := r.ManagedReader.Get(ctx, client.ObjectKeyFromObject(d), u)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", keyOf(d), err)
		}
		out = append(out, u)
	}
	return out, nil
}

// observe lists, in ns, the objects of the strict kinds and of the declared
// kinds (which it returns), and adds owned (found by the policy's sweep),
// without duplicates.
func (r *Reconciler) observe(ctx context.Context, ns string, desired []*unstructured.Unstructured,
	strict map[schema.GroupKind]bool, owned []*unstructured.Unstructured) ([]*unstructured.Unstructured, map[schema.GroupKind]bool, error) {
	kinds := map[schema.GroupKind]bool{}
	maps.Copy(kinds, strict)
	for _, d := range desired {
		kinds[d.GroupVersionKind().GroupKind()] = true
	}
	byKey := map[objectKey]*unstructured.Unstructured{}
	for _, gk := range slices.SortedFunc(maps.Keys(kinds), compareGroupKinds) {
		mapping, err := r.mapper.RESTMapping(gk)
		if err != nil {
			return nil, nil, fmt.Errorf("resolving kind %s: %w", gk, err)
		}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(mapping.GroupVersionKind.GroupVersion().WithKind(gk.Kind + "List"))
		if err := r.ManagedReader.List(ctx, list, client.InNamespace(ns)); err != nil {
			return nil, nil, fmt.Errorf("listing %s in namespace %s: %w", gk, ns, err)
		}
		for i := range list.Items {
			byKey[keyOf(&list.Items[i])] = &list.Items[i]
		}
	}
	for _, u := range owned {
		if _, ok := byKey[keyOf(u)]; !ok {
			byKey[keyOf(u)] = u
		}
	}
	return hierarchy.SortedObjects(byKey), kinds, nil
}

func compareGroupKinds(a, b schema.GroupKind) int { return strings.Compare(a.String(), b.String()) }

// scopes returns the namespaces a policy's reconcile visits: those of its
// tree, and those where it applied objects earlier.
func scopes(t *tree, owned map[string][]*metav1.PartialObjectMetadata) []string {
	set := map[string]bool{}
	for _, ns := range t.Namespaces() {
		set[ns] = true
	}
	for ns := range owned {
		if ns != "" && !hierarchy.IsReserved(ns) {
			set[ns] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

func ptrUID(u *unstructured.Unstructured) *types.UID {
	uid := u.GetUID()
	return &uid
}

func ptrRV(u *unstructured.Unstructured) *string {
	rv := u.GetResourceVersion()
	return &rv
}
