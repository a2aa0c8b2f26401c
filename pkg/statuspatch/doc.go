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
// Every patch carries a precondition: the snapshot's UID, and, for a
// writer that owns the whole status (Owner), its resourceVersion. The API
// server refuses a patch whose precondition fails (Conflict), so a status
// computed for one object never lands on a same-named successor (it is
// dropped, as for an object deleted meanwhile), and an owner's status
// computed from a stale read is redone from the API server's copy
// (Recompute). Written keeps an owner's last writes for the next
// reconciles that read a cache lagging behind them. This package is a
// leaf: it imports only apimachinery and controller-runtime's client.
package statuspatch
