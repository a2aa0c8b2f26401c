package propagator

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// ownWrites remembers the replicas the propagator patched whose patch the
// cache has not shown yet, so that a reconcile that runs before the cache
// catches up does not send the same patch again (the API server would
// accept it and change nothing: a write for no work).
//
// An entry holds the resourceVersion the replica had when it was patched
// and what was written. While the cache still shows that resourceVersion,
// the API server holds what was written unless someone wrote after it,
// and then the cache will show their write, with a resourceVersion of its
// own, and the replica is compared as usual. resourceVersions are only
// compared for equality.
type ownWrites struct {
	mu      sync.Mutex
	pending map[types.NamespacedName]ownWrite
}

// ownWrite is one patch the cache has not shown yet.
type ownWrite struct {
	before  string // the replica's resourceVersion when it was patched
	written *policyv1.Policy
}

// record remembers that the replica that had the resourceVersion before
// was patched to written.
func (o *ownWrites) record(before string, written *policyv1.Policy) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.pending == nil {
		o.pending = map[types.NamespacedName]ownWrite{}
	}
	o.pending[client.ObjectKeyFromObject(written)] = ownWrite{before: before, written: written}
}

// holds reports whether cached, the replica as the cache shows it, lags a
// patch this process wrote of exactly what desired asks.
func (o *ownWrites) holds(desired, cached *policyv1.Policy) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	w, ok := o.pending[client.ObjectKeyFromObject(cached)]
	return ok && w.before == cached.ResourceVersion && ReplicaUpToDate(desired, w.written)
}

// seen forgets the patch of the replica cached once the cache shows a
// version of it other than the one patched.
func (o *ownWrites) seen(cached *policyv1.Policy) {
	key := client.ObjectKeyFromObject(cached)
	o.mu.Lock()
	defer o.mu.Unlock()
	if w, ok := o.pending[key]; ok && w.before != cached.ResourceVersion {
		delete(o.pending, key)
	}
}

// forget drops what is remembered of the replica key.
func (o *ownWrites) forget(key types.NamespacedName) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.pending, key)
}
