// Package statuspatch writes a reconciled object's status once, at the end
// of Reconcile, whatever happened in between: the deferred status patch of
// every Canopy controller.
//
//	func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
//		policy := &policyv1.Policy{}
//		... // get, finalizer
//		status := statuspatch.Snapshot(r.Client, policy, func(p *policyv1.Policy) any { return p.Status })
//		defer status.Apply(ctx, &retErr) // status is written once, here, whatever happens below
//		...
//	}
//
// The patch is a JSON merge patch from the snapshot, so it carries only the
// fields the reconcile changed and never overwrites another writer's. A
// status that did not change is not written.
//
// Every patch carries a precondition: the resourceVersion of the object
// it was computed from. The API server refuses a patch whose precondition
// fails (Conflict); Apply then reads the object again from the API server
// and writes nothing if it is gone or is another object (another UID), so
// a status computed for one object never lands on a same-named successor.
// The same object, it writes again on the version read: the reconcile's
// changes alone for a status several writers share, the whole status
// (computed again with Recompute) for a writer that owns it (Owner).
// Written keeps an owner's last writes for the next
// reconciles that read a cache lagging behind them. This package is a
// leaf: it imports only apimachinery and controller-runtime's client.
package statuspatch
