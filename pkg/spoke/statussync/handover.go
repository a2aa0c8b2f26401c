package statussync

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
)

// A dependency link costs the agent its dependency's template evaluated,
// the Policy's status written from the evaluation's compliance event, and
// the dependant woken by that status. Learning of the event from the
// Event informer would add a round trip in between: the event's write
// seen back by a watch. The agent wrote the event itself, so its Recorder
// writes through Writer, which hands each compliance event, as the API
// server stored it, straight to the Reconciler: the Policy is enqueued as
// the evaluation that recorded the event ends, and reconciled with that
// event among those its informer holds (freshEvents). The informer still
// delivers the event (a reconcile that finds nothing to write): the
// hand-over only adds an event the API server has, earlier; what the
// status says is computed as before.

// handoverBuffer is how many handed-over events may wait for the
// controller; when it is full, the event's informer enqueues the Policy.
const handoverBuffer = 1024

// freshTTL is how long a handed-over event is kept for a Policy whose
// informer has not shown it yet: far longer than a watch takes, far
// shorter than the API server keeps events.
const freshTTL = time.Minute

// Writer returns w, telling r of each compliance event created through it
// in namespace (every namespace when empty): those r's Event informer
// holds, so that a Policy's status tells what it would tell without the
// hand-over. Give it to the Recorder that writes the compliance events r
// reads.
func (r *Reconciler) Writer(w client.Writer, namespace string) client.Writer {
	return &handingWriter{Writer: w, r: r, namespace: namespace}
}

// handingWriter is a Writer that hands each Event it creates in namespace
// to a Reconciler.
type handingWriter struct {
	client.Writer
	r         *Reconciler
	namespace string
}

// Create creates obj and, for an Event, hands it over.
func (w *handingWriter) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if err := w.Writer.Create(ctx, obj, opts...); err != nil {
		return err
	}
	if ev, ok := obj.(*corev1.Event); ok && (w.namespace == "" || ev.Namespace == w.namespace) {
		w.r.handOver(ev)
	}
	return nil
}

// handOver keeps ev, a compliance event the API server has just stored,
// for the reconciles of its Policy, and enqueues the Policy.
func (r *Reconciler) handOver(ev *corev1.Event) {
	if r.Namespace != "" && ev.Namespace != r.Namespace || len(eventToPolicy(context.Background(), ev)) == 0 {
		return
	}
	r.fresh.add(ev.DeepCopy(), time.Now())
	select {
	case r.handedOver <- ctrlevent.GenericEvent{Object: ev}:
	default: // full, or not set up: the informer enqueues the Policy
	}
}

// freshEvents are the events handed over whose informer may not show them
// yet, by the UID of the Policy they are about. It is long-lived, shared
// by the workers.
type freshEvents struct {
	mu       sync.Mutex
	byPolicy map[types.UID][]freshEvent
	swept    time.Time // when add last dropped the expired events of every Policy
}

// freshEvent is a handed-over event and when it was handed over.
type freshEvent struct {
	event *corev1.Event
	at    time.Time
}

func (f *freshEvents) add(ev *corev1.Event, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.byPolicy == nil {
		f.byPolicy = map[types.UID][]freshEvent{}
	}
	if now.Sub(f.swept) > freshTTL { // those of Policies not reconciled since, deleted ones say
		for uid, events := range f.byPolicy {
			if now.Sub(events[len(events)-1].at) > freshTTL {
				delete(f.byPolicy, uid)
			}
		}
		f.swept = now
	}
	uid := ev.InvolvedObject.UID
	f.byPolicy[uid] = append(f.byPolicy[uid], freshEvent{event: ev, at: now})
}

// with returns cached, the events of the Policy uid its informer holds,
// and the handed-over ones it does not hold yet. It forgets those it holds
// and those handed over more than freshTTL before now.
func (f *freshEvents) with(uid types.UID, cached []corev1.Event, now time.Time) []corev1.Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	fresh := f.byPolicy[uid]
	if len(fresh) == 0 {
		return cached
	}
	held := make(map[string]bool, len(cached))
	for i := range cached {
		held[cached[i].Name] = true
	}
	var kept []freshEvent
	for _, e := range fresh {
		if !held[e.event.Name] && now.Sub(e.at) < freshTTL {
			kept = append(kept, e)
			cached = append(cached, *e.event)
		}
	}
	if len(kept) == 0 {
		delete(f.byPolicy, uid)
	} else {
		f.byPolicy[uid] = kept
	}
	return cached
}
