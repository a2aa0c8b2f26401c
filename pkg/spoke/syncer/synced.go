package syncer

import (
	"context"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
)

// syncedNamespaces remembers, per namespace, the outcome of each policy's
// last sync there, and what it read and wrote, so that a namespace is read
// from the API server once per change rather than once per visit. Both
// controllers visit every namespace of a tree: a policy's reconcile all of
// them, one after another, and the namespace keys each one (on a restart,
// all at once; on a cold start, again after every write, and the policy's
// reconcile again after every namespace's writes). make bench, 3,000
// namespaces: a restart with nothing changed read each namespace eight
// times (51 s), a cold start ten times; now each about twice.
//
// A sync that wrote is remembered as the next one would find the
// namespace: without its creates and updates (a deletion is not
// remembered). A namespace's watch events (its Namespace, or an object of
// a watched kind in it: what a sync reads) forget it, unless the event
// shows an object as the syncs remembered saw or wrote it (their own
// writes, and a watch started late listing every object again). An event
// during a sync is judged when the sync ends, against what it saw and
// wrote. A deletion always forgets the namespace, and a sync that began
// before that is not remembered: each sync starts from the namespace's
// version, which every forgetting replaces.
type syncedNamespaces struct {
	mu sync.Mutex
	// last numbers the versions: a namespace's is new when it is first
	// synced after a change.
	last uint64
	m    map[string]*syncedNamespace
}

// syncedNamespace is what is remembered of one namespace since its last
// change.
type syncedNamespace struct {
	version uint64
	// running counts the syncs of the namespace begun and not ended, and
	// events are the objects the watches showed meanwhile, judged when
	// each ends.
	running int
	events  []objectVersion
	byTree  map[treeKey]synced
}

// maxEvents bounds the events kept for a running sync to judge; beyond
// it, the namespace is forgotten.
const maxEvents = 1000

// objectVersion is an object's UID and resourceVersion.
type objectVersion struct {
	uid             types.UID
	resourceVersion string
}

// synced is an outcome that wrote nothing (or settled: see end), and what
// its sync read.
type synced struct {
	o outcome
	observation
}

// observation is what a sync read of a namespace: the kinds it listed
// there (an object the policy's sweep finds of another kind was not
// planned) and the resourceVersion of each object it saw or wrote, by UID.
type observation struct {
	listed map[schema.GroupKind]bool
	seen   map[types.UID]string
}

// saw adds objs to what was seen.
func (r *observation) saw(objs []*unstructured.Unstructured) {
	for _, u := range objs {
		r.seen[u.GetUID()] = u.GetResourceVersion()
	}
}

// lookup returns the outcome remembered for plan in ns, when it covers the
// objects the policy applied there earlier (owned).
func (s *syncedNamespaces) lookup(ns string, plan treeKey, owned []*metav1.PartialObjectMetadata) (outcome, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.m[ns]
	if e == nil {
		return outcome{}, false
	}
	last, ok := e.byTree[plan]
	if !ok {
		return outcome{}, false
	}
	for _, u := range owned {
		if !last.listed[u.GroupVersionKind().GroupKind()] {
			return outcome{}, false
		}
	}
	return last.o, true
}

// begin starts a sync of ns and returns its version, for end.
func (s *syncedNamespaces) begin(ns string) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]*syncedNamespace{}
	}
	e := s.m[ns]
	if e == nil {
		s.last++
		e = &syncedNamespace{version: s.last, byTree: map[treeKey]synced{}}
		s.m[ns] = e
	}
	e.running++
	return e.version
}

// end ends a sync of ns begun at version. It remembers o, the outcome of
// plan, when nothing failed, and ns has not changed since: neither
// forgotten, nor shown by an event other than as this sync saw or wrote it.
// Events during the sync also forget the other outcomes they contradict.
func (s *syncedNamespaces) end(ns string, version uint64, plan treeKey, o outcome, read observation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.m[ns]
	if e == nil || e.version != version {
		return
	}
	e.running--
	unchanged := true
	for _, ev := range e.events {
		for k, last := range e.byTree {
			if last.seen[ev.uid] != ev.resourceVersion {
				delete(e.byTree, k)
			}
		}
		unchanged = unchanged && read.seen[ev.uid] == ev.resourceVersion
	}
	if e.running == 0 {
		e.events = nil
	}
	for k := range e.byTree {
		if k.uid == plan.uid { // this sync's, now older
			delete(e.byTree, k)
		}
	}
	if settled, ok := o.settled(); ok && unchanged {
		e.byTree[plan] = synced{o: settled, observation: read}
	}
}

// changed forgets what is remembered of ns: an object in it (or its
// Namespace) went.
func (s *syncedNamespaces) changed(ns string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, ns)
}

// observed tells of obj, an object in ns (or its Namespace) as a watch
// shows it now. While a sync of ns runs, end judges it; otherwise what is
// remembered of ns is forgotten unless every outcome's sync saw obj at
// this resourceVersion.
func (s *syncedNamespaces) observed(ns string, obj client.Object) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.m[ns]
	if e == nil {
		return
	}
	now := objectVersion{uid: obj.GetUID(), resourceVersion: obj.GetResourceVersion()}
	if e.running > 0 {
		if len(e.events) < maxEvents {
			e.events = append(e.events, now)
		} else {
			delete(s.m, ns)
		}
		return
	}
	unchanged := len(e.byTree) > 0 && now.resourceVersion != ""
	for _, last := range e.byTree {
		unchanged = unchanged && last.seen[now.uid] == now.resourceVersion
	}
	if !unchanged {
		delete(s.m, ns)
	}
}

// forgetting is a handler that tells synced of each event of an object in
// (or the Namespace of) namespace scope(obj), then passes it on to next.
// Each controller's handlers tell synced themselves: an informer's handlers
// run independently, and the reconcile a key starts must not find the
// namespace's outcome from before the change.
type forgetting[R comparable] struct {
	synced *syncedNamespaces
	scope  func(client.Object) string
	next   handler.TypedEventHandler[client.Object, R]
}

func (h forgetting[R]) Create(ctx context.Context, e event.TypedCreateEvent[client.Object], q workqueue.TypedRateLimitingInterface[R]) {
	h.tell(e.Object, true)
	h.next.Create(ctx, e, q)
}

func (h forgetting[R]) Update(ctx context.Context, e event.TypedUpdateEvent[client.Object], q workqueue.TypedRateLimitingInterface[R]) {
	h.tell(e.ObjectNew, true)
	h.next.Update(ctx, e, q)
}

func (h forgetting[R]) Delete(ctx context.Context, e event.TypedDeleteEvent[client.Object], q workqueue.TypedRateLimitingInterface[R]) {
	h.tell(e.Object, false)
	h.next.Delete(ctx, e, q)
}

func (h forgetting[R]) Generic(ctx context.Context, e event.TypedGenericEvent[client.Object], q workqueue.TypedRateLimitingInterface[R]) {
	h.tell(e.Object, false)
	h.next.Generic(ctx, e, q)
}

// tell forgets obj's namespace, or, when obj exists (a creation or an
// update), lets synced compare it with what the syncs saw.
func (h forgetting[R]) tell(obj client.Object, exists bool) {
	ns := h.scope(obj)
	switch {
	case ns == "":
	case exists:
		h.synced.observed(ns, obj)
	default:
		h.synced.changed(ns)
	}
}

// settled returns o as the next sync would find the namespace: what o
// created and updated as declared, its conflicts and holds as they were.
// It is false when o failed or deleted something (an object gone is not
// among what a sync saw).
func (o outcome) settled() (outcome, bool) {
	if o.failed.count() > 0 {
		return outcome{}, false
	}
	if !o.applied {
		return o, true // inform: nothing was written
	}
	out := o
	out.actions, out.written = nil, nil
	for _, a := range o.actions {
		switch a.op {
		case opDelete:
			return outcome{}, false
		case opCreate, opUpdate:
		default:
			out.actions = append(out.actions, a)
		}
	}
	return out, true
}
