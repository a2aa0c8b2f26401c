package statussync

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// Every status statussync writes comes back to it as an update of the
// Policy. Reconciling it computes the status just written again and
// writes nothing: at one write per compliance event, that was half of
// statussync's reconciles, in the queue of a dependency link's Policy
// (make bench: agent cascade). ownWrites remembers the resourceVersion
// each of its writes made, and notOwnWrite lets through every update but
// the one that brings that version back, which holds the status statussync
// computed and nothing else.

// ownWrites is, by Policy UID, the resourceVersion statussync's last status
// write made. It is long-lived, shared by the workers.
type ownWrites struct {
	mu       sync.Mutex
	versions map[types.UID]string
}

// wrote remembers the version of policy that a status write made.
func (w *ownWrites) wrote(policy *policyv1.Policy) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.versions == nil {
		w.versions = map[types.UID]string{}
	}
	w.versions[policy.UID] = policy.ResourceVersion
}

// isOwn reports whether obj is the version statussync's last status write
// of it made, and forgets that version.
func (w *ownWrites) isOwn(obj client.Object) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	v, ok := w.versions[obj.GetUID()]
	if !ok || v != obj.GetResourceVersion() {
		return false
	}
	delete(w.versions, obj.GetUID())
	return true
}

// forget drops what is remembered of the Policy obj: it is gone.
func (w *ownWrites) forget(obj client.Object) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.versions, obj.GetUID())
}

// notOwnWrite lets through every event of a Policy but the update that
// brings back the version a status write of statussync's made.
func (w *ownWrites) notOwnWrite() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e ctrlevent.UpdateEvent) bool { return !w.isOwn(e.ObjectNew) },
		DeleteFunc: func(e ctrlevent.DeleteEvent) bool { w.forget(e.Object); return true },
	}
}

// onPatched remembers the version a status write made, and logs it in
// detail only: statussync writes one per compliance event.
func (w *ownWrites) onPatched(ctx context.Context, policy *policyv1.Policy) {
	w.wrote(policy)
	ctrl.LoggerFrom(ctx).V(4).Info("Updated policy status", "policy", klog.KObj(policy), "compliance", policy.Status.ComplianceState)
}
