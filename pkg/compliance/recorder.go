package compliance

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Recorder writes compliance events on the managed cluster, one per change
// of a template's compliance rather than one per evaluation. It is safe for
// concurrent use, and one Recorder may serve every controller of a process.
type Recorder struct {
	writer client.Writer
	reader client.Reader
	source EventSource
	now    func() time.Time

	mu   sync.Mutex
	last map[recordKey]recorded
}

// recordKey identifies one template's event stream on one parent.
type recordKey struct {
	parent types.UID
	reason string
}

// recorded is what a Recorder remembers of the last event of a stream.
type recorded struct {
	Compliance
	remediated bool
}

// RecordOptions are the optional parts of a compliance event.
type RecordOptions struct {
	// Related references the template object; it becomes the event's related
	// object.
	Related *corev1.ObjectReference
	// Remediated says that the evaluator changed the cluster (created,
	// updated or deleted objects) to reach the reported state. A remediation
	// is always recorded, even when the state is unchanged.
	Remediated bool
}

// NewRecorder returns a Recorder that creates events with writer. reader
// must read from the API server, not a cache: a Recorder that meets a
// template for the first time (after a restart, say) reads the template's
// latest event through it, to go on from there instead of repeating it.
func NewRecorder(writer client.Writer, reader client.Reader, src EventSource) *Recorder {
	return &Recorder{writer: writer, reader: reader, source: src, now: time.Now, last: map[recordKey]recorded{}}
}

// Record records c on parent when it is news, and reports whether it wrote
// an event. c is news when it is the template's first event, when it is a
// remediation, when its state differs from the last event's, or when its
// message does — except the first message after a remediation in the same
// state: that is the fix settling ("was updated" becoming "found as
// specified"), not a change.
func (r *Recorder) Record(ctx context.Context, parent Parent, c Compliance, opts RecordOptions) (bool, error) {
	key := recordKey{parent: parent.UID, reason: c.Reason()}
	last, err := r.lastRecorded(ctx, parent, key)
	if err != nil {
		return false, err
	}
	emit, remember := decide(last, c, opts.Remediated)
	if emit {
		ev := NewEvent(parent, c, r.source, opts.Related, opts.Remediated, r.now())
		if err := r.writer.Create(ctx, ev); err != nil {
			return false, fmt.Errorf("creating compliance event %s/%s: %w", ev.Namespace, ev.Name, err)
		}
	}
	r.mu.Lock()
	r.last[key] = remember
	r.mu.Unlock()
	return emit, nil
}

// Forget drops what r remembers of template's events, on every parent;
// call it when the template is deleted.
func (r *Recorder) Forget(template types.NamespacedName) {
	reason := Compliance{Template: template}.Reason()
	r.mu.Lock()
	defer r.mu.Unlock()
	for key := range r.last {
		if key.reason == reason {
			delete(r.last, key)
		}
	}
}

// decide says whether next is news after last (nil: no event known), and
// what to remember afterwards.
func decide(last *recorded, next Compliance, remediated bool) (bool, recorded) {
	now := recorded{Compliance: next, remediated: remediated}
	switch {
	case last == nil, remediated, last.State != next.State:
		return true, now
	case last.Message == next.Message:
		return false, *last
	case last.remediated:
		return false, now
	default:
		return true, now
	}
}

// lastRecorded returns the last event of key: from memory, or else from the
// API server (nil when there is none).
func (r *Recorder) lastRecorded(ctx context.Context, parent Parent, key recordKey) (*recorded, error) {
	r.mu.Lock()
	last, ok := r.last[key]
	r.mu.Unlock()
	if ok {
		return &last, nil
	}
	list := &corev1.EventList{}
	selector := fields.SelectorFromSet(fields.Set{"involvedObject.uid": string(parent.UID), "reason": key.reason})
	err := r.reader.List(ctx, list, client.InNamespace(parent.Namespace), client.MatchingFieldsSelector{Selector: selector})
	if err != nil {
		return nil, fmt.Errorf("listing the compliance events of policy %s/%s: %w", parent.Namespace, parent.Name, err)
	}
	return latest(list.Items), nil
}

// latest returns the newest parseable compliance event of events, or nil.
func latest(events []corev1.Event) *recorded {
	var newest *corev1.Event
	for i := range events {
		ev := &events[i]
		if _, err := Parse(ev); err != nil {
			continue
		}
		if newest == nil || newer(ev, newest) {
			newest = ev
		}
	}
	if newest == nil {
		return nil
	}
	c, _ := Parse(newest)
	return &recorded{Compliance: c, remediated: newest.Action == ActionRemediate}
}

// newer orders events by last timestamp, then by name (which, for the
// events NewEvent builds, carries the time in nanoseconds).
func newer(a, b *corev1.Event) bool {
	ta, tb := eventTime(a), eventTime(b)
	if !ta.Equal(tb) {
		return ta.After(tb)
	}
	return a.Name > b.Name
}

func eventTime(ev *corev1.Event) time.Time {
	if !ev.LastTimestamp.IsZero() {
		return ev.LastTimestamp.Time
	}
	if !ev.EventTime.IsZero() {
		return ev.EventTime.Time
	}
	return ev.CreationTimestamp.Time
}
