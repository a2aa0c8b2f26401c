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
	reader    client.Reader                  // read again on a conflict: ReadFrom's, Owner's, or the client
	owner     bool                           // set by Owner
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
	p.reader, _ = c.(client.Reader)
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

// ReadFrom sets where Apply reads the object again after a conflict: the
// API server (a manager's API reader). Without it, Apply reads through the
// client that writes, when it reads: a cache may need several conflicts to
// catch up, after which the conflict is returned, for the reconcile to be
// retried.
//
// A nil reader leaves the default.
func ReadFrom[T Object[T]](reader client.Reader) Option[T] {
	return func(p *Patch[T]) {
		if reader != nil {
			p.reader = reader
		}
	}
}

// Owner tells Apply that its writer computes the status it writes from the
// object it read, as the only writer of the whole status (or, with
// Recompute, of the fields Recompute sets); the object is read again from
// reader (as ReadFrom) after a conflict. The write is then redone with the
// status Recompute computes for the object read, or, without Recompute,
// with the whole status the reconcile computed when the object's
// generation is the snapshot's (the spec it was computed for); not with
// the reconcile's changes alone, which a status newer than the snapshot
// would make wrong.
func Owner[T Object[T]](reader client.Reader) Option[T] {
	return func(p *Patch[T]) { p.reader, p.owner = reader, true }
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

// Advance tells the patch that the same reconcile has already written part
// of the status on the same object: written is that object as the API
// server answered the write, and set copies the fields the write set from
// written to the snapshot. Apply then sends only what the reconcile
// changed besides (nothing, when nothing else changed), with written's
// resourceVersion as precondition, instead of being refused on the version
// the snapshot was taken from and sending everything again. A written of
// another UID leaves the patch as it is.
func (p *Patch[T]) Advance(written T, set func(from, to T)) {
	if written.GetUID() != p.orig.GetUID() {
		return
	}
	set(written, p.orig)
	p.orig.SetResourceVersion(written.GetResourceVersion())
}

// Apply patches the object's status when it differs from the snapshot's.
// Call it deferred, with the address of Reconcile's named error result: a
// failed patch is aggregated into it; an object deleted meanwhile, or
// deleted and recreated under the same name, is not a failure and gets
// nothing.
//
// Every patch carries the resourceVersion of the object it was computed
// from as a precondition: the API server refuses it (Conflict) when the
// object changed since, or is another object of the same name (a
// resourceVersion names one version of one object; a UID in a status
// patch is not checked by the API server). Refused, the object is read
// again from the API server: gone or another UID, nothing is written, so
// that a status never lands on a same-named successor; the same object,
// the write is redone on the version read: the reconcile's changes alone
// for a shared status, the whole status for an Owner.
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
	if p.unchanged(p.orig, p.obj, reconcileErr) {
		return nil
	}
	delta, err := client.MergeFrom(p.orig).Data(p.obj)
	if err != nil {
		return fmt.Errorf("computing the status patch of %s: %w", name(p.orig), err)
	}
	rv := p.orig.GetResourceVersion()
	for attempt := 1; ; attempt++ {
		patch, err := preconditioned(delta, rv)
		if err != nil {
			return fmt.Errorf("computing the status patch of %s: %w", name(p.orig), err)
		}
		err = p.client.Status().Patch(ctx, p.obj, patch)
		switch {
		case err == nil:
			if p.written != nil {
				p.written.record(rv, p.obj)
			}
			if p.patched != nil {
				p.patched(ctx, p.obj)
			}
			return nil
		case apierrors.IsNotFound(err):
			return nil
		case !apierrors.IsConflict(err) || p.reader == nil || attempt == maxAttempts:
			return err
		}
		fresh := p.orig.DeepCopy()
		if err := p.reader.Get(ctx, client.ObjectKeyFromObject(p.orig), fresh); apierrors.IsNotFound(err) {
			return nil
		} else if err != nil {
			return fmt.Errorf("reading %s again after a conflict: %w", name(p.orig), err)
		}
		if fresh.GetUID() != p.orig.GetUID() {
			return nil // deleted and recreated: the status computed is not the successor's
		}
		rv = fresh.GetResourceVersion()
		if !p.owner {
			continue // the same changes, on the version read
		}
		next, err := p.next(ctx, fresh, err)
		if err != nil {
			return err
		}
		if p.unchanged(fresh, next, reconcileErr) {
			return nil
		}
		if delta, err = client.MergeFrom(fresh).Data(next); err != nil {
			return fmt.Errorf("computing the status patch of %s: %w", name(p.orig), err)
		}
	}
}

// unchanged tells a status of obj that needs no write over base's.
func (p *Patch[T]) unchanged(base, obj T, reconcileErr error) bool {
	return equality.Semantic.DeepEqual(p.status(base), p.status(obj)) || p.skip != nil && p.skip(base, obj, reconcileErr)
}

// name is obj's namespace/name, for errors.
func name(obj client.Object) string {
	return obj.GetNamespace() + "/" + obj.GetName()
}

// next is the object with the status to write over fresh, the object read
// again after conflict: recomputed, or the reconcile's status when fresh
// has the spec it was computed for (otherwise conflict is returned, for
// the reconcile to be run again).
func (p *Patch[T]) next(ctx context.Context, fresh T, conflict error) (T, error) {
	next := fresh.DeepCopy()
	if p.recompute != nil {
		if err := p.recompute(ctx, next); err != nil {
			return next, fmt.Errorf("computing the status of %s again after a conflict: %w", name(fresh), err)
		}
		return next, nil
	}
	if fresh.GetGeneration() != p.orig.GetGeneration() {
		return next, fmt.Errorf("status of %s computed for generation %d, now %d: %w",
			name(fresh), p.orig.GetGeneration(), fresh.GetGeneration(), conflict)
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

// preconditioned is the JSON merge patch delta with metadata.resourceVersion
// set to rv (when not empty): the API server refuses it with a Conflict when
// the object it holds is at another version.
func preconditioned(delta []byte, rv string) (client.Patch, error) {
	patch := map[string]any{}
	if err := json.Unmarshal(delta, &patch); err != nil {
		return nil, err
	}
	if rv != "" {
		meta, _ := patch["metadata"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
		}
		meta["resourceVersion"] = rv
		patch["metadata"] = meta
	}
	data, err := json.Marshal(patch)
	if err != nil {
		return nil, err
	}
	return client.RawPatch(types.MergePatchType, data), nil
}
