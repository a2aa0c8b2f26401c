package statuspatch

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Object is an API object whose DeepCopy returns its own type, as the
// generated DeepCopy of every Canopy and Kubernetes type does.
type Object[T any] interface {
	client.Object
	DeepCopy() T
}

// Patch is the deferred status patch of one object: its snapshot, taken
// before the reconcile changes it, and what to compare and write.
type Patch[T Object[T]] struct {
	client  client.StatusClient
	orig    T
	obj     T
	status  func(T) any
	skip    func(orig, obj T, reconcileErr error) bool
	patched func(ctx context.Context, obj T)
}

// Option tunes a Patch.
type Option[T Object[T]] func(*Patch[T])

// Snapshot copies obj before a reconcile changes it. status returns the
// status of an object of its type (the field Apply compares); c writes it.
func Snapshot[T Object[T]](c client.StatusClient, obj T, status func(T) any, opts ...Option[T]) *Patch[T] {
	p := &Patch[T]{client: c, orig: obj.DeepCopy(), obj: obj, status: status}
	for _, o := range opts {
		o(p)
	}
	return p
}

// SkipWhen leaves a changed status unwritten when skip returns true for
// the snapshot, the reconciled object and the reconcile's error: say, a
// failure retried with backoff that would only bump a timestamp.
func SkipWhen[T Object[T]](skip func(orig, obj T, reconcileErr error) bool) Option[T] {
	return func(p *Patch[T]) { p.skip = skip }
}

// OnPatched calls patched after the status was written (to log it, say).
func OnPatched[T Object[T]](patched func(ctx context.Context, obj T)) Option[T] {
	return func(p *Patch[T]) { p.patched = patched }
}

// Apply patches the object's status when it differs from the snapshot's.
// Call it deferred, with the address of Reconcile's named error result: a
// failed patch is aggregated into it; an object deleted meanwhile is not a
// failure.
func (p *Patch[T]) Apply(ctx context.Context, reconcileErr *error) {
	if equality.Semantic.DeepEqual(p.status(p.orig), p.status(p.obj)) {
		return
	}
	if p.skip != nil && p.skip(p.orig, p.obj, *reconcileErr) {
		return
	}
	if err := p.client.Status().Patch(ctx, p.obj, client.MergeFrom(p.orig)); err != nil {
		*reconcileErr = kerrors.NewAggregate([]error{*reconcileErr, client.IgnoreNotFound(err)})
		return
	}
	if p.patched != nil {
		p.patched(ctx, p.obj)
	}
}
