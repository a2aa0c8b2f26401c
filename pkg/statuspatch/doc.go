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
// status that did not change is not written. This package is a leaf: it
// imports only apimachinery and controller-runtime's client.
package statuspatch
