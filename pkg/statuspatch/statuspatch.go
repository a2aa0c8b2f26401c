package statuspatch

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// maxAttempts bounds the writes of one Apply: the first, and the retries
// after conflicts.
const maxAttempts = 5

// Object is an API object whose DeepCopy returns its own type, as the
// generated DeepCopy of every Canopy and Kubernetes type does.
type Object[T any] interface {
	client.Object
	DeepCopy() T
}

// Patch is the deferred status patch of one object: its snapshot, taken
// before the reconcile changes it, and what to compare and write.
type Patch[T Object[T]] struct {
	client    client.StatusClient
	orig      T
	obj       T
	status    func(T) any
	skip      func(orig, obj T, reconcileErr error) bool
	patched   func(ctx context.Context, obj T)
	reader    client.Reader                  // set by Owner: the API server, read again on a conflict
	recompute func(context.Context, T) error // set by Recompute
	written   *Written[T]                    // set by Remember
}

// Option tunes a Patch.
type Option[T Object[T]] func(*Patch[T])

// Snapshot copies obj before a reconcile changes it. status returns the
// status of an object of its type (the field Apply compares); c writes it.
// With Remember, obj read from a cache that has not seen the last status
// written on it is first set to the object as written.
func Snapshot[T Object[T]](c client.StatusClient, obj T, status func(T) any, opts ...Option[T]) *Patch[T] {
	p := &Patch[T]{client: c, obj: obj, status: status}
	for _, o := range opts {
		o(p)
	}
	if p.written != nil {
		p.written.restore(obj)
	}
	p.orig = obj.DeepCopy()
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

// Owner tells Apply that its writer is the only writer of the whole
// status: the patch then also carries the snapshot's resourceVersion, so
// that a status computed from an object older than the API server's is
// refused (Conflict) rather than merged into a newer status. Refused, the
// write is redone on the object read again from reader, which must read
// the API server, not a cache: with the status Recompute computes for it,
// or, without Recompute, with the status the reconcile computed, when the
// object's generation is the snapshot's (the spec it was computed for).
func Owner[T Object[T]](reader client.Reader) Option[T] {
	return func(p *Patch[T]) { p.reader = reader }
}

// Recompute sets how Owner's retry computes the status of the object read
// again: compute changes the status of the object it is given, as the
// reconcile did (it must not write anything else).
func Recompute[T Object[T]](compute func(context.Context, T) error) Option[T] {
	return func(p *Patch[T]) { p.recompute = compute }
}

// Remember keeps what Apply writes in w, for the Snapshots of the next
// reconciles of the same object (see Written). Use it with Owner.
func Remember[T Object[T]](w *Written[T]) Option[T] {
	return func(p *Patch[T]) { p.written = w }
}

// Apply patches the object's status when it differs from the snapshot's.
// Call it deferred, with the address of Reconcile's named error result: a
// failed patch is aggregated into it; an object deleted meanwhile, or
// deleted and recreated under the same name, is not a failure and gets
// nothing.
//
// Every patch carries the snapshot's UID as a precondition (and, with
// Owner, its resourceVersion): the API server refuses it with a Conflict
// when the object is not the one the status was computed for, so that a
// status never lands on a same-named successor.
func (p *Patch[T]) Apply(ctx context.Context, reconcileErr *error) {
	switch err := p.apply(ctx, *reconcileErr); {
	case err == nil:
	case *reconcileErr == nil:
		*reconcileErr = err
	default:
		*reconcileErr = kerrors.NewAggregate([]error{*reconcileErr, err})
	}
}

// apply writes the status, retrying on conflicts, and returns the error
// that is the caller's (none for an object gone or replaced).
func (p *Patch[T]) apply(ctx context.Context, reconcileErr error) error {
	base, target := p.orig, p.obj
	for attempt := 1; ; attempt++ {
		if equality.Semantic.DeepEqual(p.status(base), p.status(target)) {
			return nil
		}
		if p.skip != nil && p.skip(base, target, reconcileErr) {
			return nil
		}
		patch, err := preconditioned(base, target, p.reader != nil)
		if err != nil {
			return err
		}
		readRV := base.GetResourceVersion()
		err = p.client.Status().Patch(ctx, p.obj, patch)
		switch {
		case err == nil:
			if p.written != nil {
				p.written.record(readRV, p.obj)
			}
			if p.patched != nil {
				p.patched(ctx, p.obj)
			}
			return nil
		case apierrors.IsNotFound(err):
			return nil
		case !apierrors.IsConflict(err):
			return err
		case p.reader == nil:
			return nil // the patch's one precondition is the UID: the object is another
		case attempt == maxAttempts:
			return err
		}
		fresh := p.orig.DeepCopy()
		if err := p.reader.Get(ctx, client.ObjectKeyFromObject(p.orig), fresh); apierrors.IsNotFound(err) {
			return nil
		} else if err != nil {
			return fmt.Errorf("reading %s/%s again after a conflict: %w", p.orig.GetNamespace(), p.orig.GetName(), err)
		}
		if fresh.GetUID() != p.orig.GetUID() {
			return nil // deleted and recreated: the status computed is not the successor's
		}
		next, err := p.next(ctx, fresh, err)
		if err != nil {
			return err
		}
		base, target = fresh, next
	}
}

// next is the object with the status to write over fresh, the object read
// again after conflict: recomputed, or the reconcile's status when fresh
// has the spec it was computed for (otherwise conflict is returned, for
// the reconcile to be run again).
func (p *Patch[T]) next(ctx context.Context, fresh T, conflict error) (T, error) {
	next := fresh.DeepCopy()
	if p.recompute != nil {
		if err := p.recompute(ctx, next); err != nil {
			return next, fmt.Errorf("computing the status of %s/%s again after a conflict: %w", fresh.GetNamespace(), fresh.GetName(), err)
		}
		return next, nil
	}
	if fresh.GetGeneration() != p.orig.GetGeneration() {
		return next, fmt.Errorf("status of %s/%s computed for generation %d, now %d: %w",
			fresh.GetNamespace(), fresh.GetName(), p.orig.GetGeneration(), fresh.GetGeneration(), conflict)
	}
	return next, copyStatus(p.obj, next)
}

// copyStatus sets to's status to a copy of from's (the field Status of
// every API type), made through JSON.
func copyStatus[T Object[T]](from, to T) error {
	status := reflect.ValueOf(from).Elem().FieldByName("Status")
	dst := reflect.ValueOf(to).Elem().FieldByName("Status")
	if !status.IsValid() || !dst.IsValid() || !dst.CanSet() {
		return fmt.Errorf("%T has no status field", from)
	}
	data, err := json.Marshal(status.Interface())
	if err != nil {
		return fmt.Errorf("encoding a status: %w", err)
	}
	fresh := reflect.New(dst.Type())
	if err := json.Unmarshal(data, fresh.Interface()); err != nil {
		return fmt.Errorf("decoding a status: %w", err)
	}
	dst.Set(fresh.Elem())
	return nil
}

// preconditioned is the JSON merge patch from base to target, carrying
// base's UID and, with withVersion, its resourceVersion: the API server
// refuses it with a Conflict when the object it holds has another.
func preconditioned(base, target client.Object, withVersion bool) (client.Patch, error) {
	data, err := client.MergeFrom(base).Data(target)
	if err != nil {
		return nil, fmt.Errorf("computing the status patch of %s/%s: %w", base.GetNamespace(), base.GetName(), err)
	}
	patch := map[string]any{}
	if err := json.Unmarshal(data, &patch); err != nil {
		return nil, fmt.Errorf("decoding the status patch of %s/%s: %w", base.GetNamespace(), base.GetName(), err)
	}
	meta, _ := patch["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
	}
	if uid := base.GetUID(); uid != "" {
		meta["uid"] = uid
	}
	if rv := base.GetResourceVersion(); withVersion && rv != "" {
		meta["resourceVersion"] = rv
	}
	if len(meta) > 0 {
		patch["metadata"] = meta
	}
	if data, err = json.Marshal(patch); err != nil {
		return nil, fmt.Errorf("encoding the status patch of %s/%s: %w", base.GetNamespace(), base.GetName(), err)
	}
	return client.RawPatch(types.MergePatchType, data), nil
}
