package history

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/canopy-policy/canopy/pkg/history"
	"github.com/canopy-policy/canopy/pkg/replica"
)

// pendingReplica is what the recorder holds of a replica whose change is
// not stored yet. Only the reconcile of its key changes it, except changes
// and deleteSeen, which the event handler counts (under Recorder.mu).
type pendingReplica struct {
	// since is when the oldest change not stored was seen.
	since time.Time
	// changes counts the replica's change events; readAt is its value when
	// the replica was last read. They differ while a change is unread.
	changes, readAt uint64
	// deleteSeen is whether a delete event came after the last read.
	deleteSeen bool
	// read is the last read, not planned yet (what is stored was not known
	// when it was read).
	read *planInput
	// transitions and gaps are planned and not stored yet.
	transitions []history.Transition
	gaps        []history.Gap
	// deleted is when the replica was found gone; zero while it exists.
	deleted time.Time
	// deletedUnread is whether it changed after its last read before it
	// was found gone: what happened in between cannot be known.
	deletedUnread bool
}

// changes is the recorder's event handler: it counts each replica's
// changes before queueing it, so that a reconcile knows whether the
// replica changed since it last read it.
type changes struct{ r *Recorder }

// Create implements handler.EventHandler.
func (h changes) Create(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.r.changed(client.ObjectKeyFromObject(e.Object))
	q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(e.Object)})
}

// Update implements handler.EventHandler.
func (h changes) Update(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.r.changed(client.ObjectKeyFromObject(e.ObjectNew))
	q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(e.ObjectNew)})
}

// Delete implements handler.EventHandler.
func (h changes) Delete(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.r.deleteSeen(client.ObjectKeyFromObject(e.Object))
	q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(e.Object)})
}

// Generic implements handler.EventHandler: the probe's retries.
func (h changes) Generic(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(e.Object)})
}

// changed counts a change of a replica.
func (r *Recorder) changed(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.pending[key]
	if p == nil {
		p = &pendingReplica{since: time.Now()}
		r.pending[key] = p
	}
	p.changes++
}

// deleteSeen notes a delete event of a replica that has a pending state.
func (r *Recorder) deleteSeen(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.pending[key]; p != nil {
		p.deleteSeen = true
	}
}

// unread returns the change count to read a replica at, and whether it
// must be read: it has no pending state (nothing the recorder knows is
// unstored), or it changed or was deleted since it was last read.
func (r *Recorder) unread(key types.NamespacedName) (uint64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.pending[key]
	if p == nil {
		return 0, true
	}
	return p.changes, p.changes != p.readAt || p.deleteSeen
}

// setRead keeps what was read of a replica as of change count seen. A
// read not planned yet is planned first, when what is stored is known, so
// that what it held is recorded even when the next read no longer holds
// it.
func (r *Recorder) setRead(key types.NamespacedName, seen uint64, in planInput) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.pendingLocked(key, seen)
	if p.read != nil && r.loaded.Load() {
		r.planLocked(key, p)
	}
	p.read, p.deleted, p.deletedUnread = &in, time.Time{}, false
}

// gone notes that a replica was found deleted, at change count seen.
func (r *Recorder) gone(key types.NamespacedName, seen uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.pending[key]
	if p == nil {
		delete(r.latest, key)
		return
	}
	unread := seen != p.readAt
	p = r.pendingLocked(key, seen)
	if p.deleted.IsZero() {
		p.deleted, p.deletedUnread = time.Now(), unread
	}
}

// pendingLocked returns the pending state of a replica read at change
// count seen.
func (r *Recorder) pendingLocked(key types.NamespacedName, seen uint64) *pendingReplica {
	p := r.pending[key]
	if p == nil {
		p = &pendingReplica{since: time.Now(), changes: seen}
		r.pending[key] = p
	}
	p.readAt, p.deleteSeen = seen, false
	return p
}

// planPending plans a replica's pending state against what is stored and
// returns what to write; false when it has none.
func (r *Recorder) planPending(key types.NamespacedName) ([]history.Transition, []history.Gap, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.pending[key]
	if p == nil {
		return nil, nil, false
	}
	r.planLocked(key, p)
	if !p.deleted.IsZero() && p.deletedUnread {
		root, ok := replica.RootOf(key.Name)
		if ok {
			known := newest(r.latest[key], p.transitions)
			p.gaps = append(p.gaps, deletionGaps(r.HubName, key.Namespace, history.Policy{Namespace: root.Namespace, Name: root.Name}, known, p.deleted)...)
		}
		p.deletedUnread = false
	}
	return p.transitions, p.gaps, true
}

// planLocked plans the unplanned read of p, against what is stored and
// what p already holds, into p's transitions and gaps.
func (r *Recorder) planLocked(key types.NamespacedName, p *pendingReplica) {
	if p.read == nil {
		return
	}
	in := *p.read
	in.Latest = newest(r.latest[key], p.transitions)
	transitions, gaps := plan(in)
	p.transitions = merge(p.transitions, transitions)
	p.gaps = append(p.gaps, gaps...)
	p.read = nil
}

// stored notes that transitions of a replica (and its gaps) are stored,
// and drops its pending state unless it changed meanwhile.
func (r *Recorder) stored(key types.NamespacedName, transitions []history.Transition) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.pending[key]
	if p == nil {
		return
	}
	r.latest[key] = newest(r.latest[key], transitions)
	p.transitions, p.gaps = nil, nil
	if p.changes != p.readAt || p.deleteSeen || p.read != nil {
		p.since = time.Now()
		return // the queue holds it again
	}
	delete(r.pending, key)
	delete(r.stalled, key)
	if !p.deleted.IsZero() {
		delete(r.latest, key)
	}
}

// stall notes that a replica waits for the database.
func (r *Recorder) stall(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stalled[key] = true
}

// takeStalled returns the replicas waiting for the database and forgets
// them.
func (r *Recorder) takeStalled() []types.NamespacedName {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := make([]types.NamespacedName, 0, len(r.stalled))
	for key := range r.stalled {
		keys = append(keys, key)
	}
	clear(r.stalled)
	return keys
}

// restall puts keys back among the replicas waiting for the database.
func (r *Recorder) restall(keys []types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, key := range keys {
		r.stalled[key] = true
	}
}
