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

	policyv1 "github.com/canopy-policy/canopy/api/v1"
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
	// object is the UID of the template object the event is about: empty
	// for templatesync's events and for events that name no object.
	object types.UID
	// event and at are the name and time of the last event written (or,
	// after a restart, read): empty when unknown. RecordOptions.Visible is
	// compared with them.
	event string
	at    time.Time
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
	// Visible is what the reader of the events shows for the template now:
	// the newest entry of its history in the parent Policy's
	// status.details, nil when there is none. When it says otherwise than
	// c and is not older than the last event the Recorder knows of, c is
	// recorded again: the status, not the Recorder's memory, is what users
	// see, and something newer (a stale event, a status written by an older
	// agent) took the place of the last event.
	Visible *policyv1.ComplianceHistory
}

// object returns the UID of the template object the event is about.
func (o RecordOptions) object() types.UID {
	if o.Related == nil {
		return ""
	}
	return o.Related.UID
}

// NewRecorder returns a Recorder that creates events with writer. reader
// must read from the API server, not a cache: a Recorder that meets a
// template for the first time (after a restart, say) reads the template's
// latest event through it, to go on from there instead of repeating it.
func NewRecorder(writer client.Writer, reader client.Reader, src EventSource) *Recorder {
	return &Recorder{writer: writer, reader: reader, source: src, now: time.Now, last: map[recordKey]recorded{}}
}

// Record records c on parent when it is news, and reports whether it wrote
// an event. c is news when it is the template's first event, or the first
// about the object opts.Related names (a recreated template), when it is a
// remediation, when its state differs from the last event's, when its
// message does — except the first message after a remediation in the same
// state: that is the fix settling ("was updated" becoming "found as
// specified"), not a change — or when opts.Visible shows something else,
// newer than the last event.
func (r *Recorder) Record(ctx context.Context, parent Parent, c Compliance, opts RecordOptions) (bool, error) {
	key := recordKey{parent: parent.UID, reason: c.Reason()}
	last, err := r.lastRecorded(ctx, parent, key, opts.object())
	if err != nil {
		return false, err
	}
	emit, remember := decide(last, c, opts)
	if emit {
		ev := NewEvent(parent, c, r.source, opts.Related, opts.Remediated, r.now())
		if err := r.writer.Create(ctx, ev); err != nil {
			return false, fmt.Errorf("creating compliance event %s/%s: %w", ev.Namespace, ev.Name, err)
		}
		remember.event, remember.at = ev.Name, ev.LastTimestamp.Time
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
// what to remember afterwards (the caller adds the event it writes).
func decide(last *recorded, next Compliance, opts RecordOptions) (bool, recorded) {
	now := recorded{Compliance: next, remediated: opts.Remediated, object: opts.object()}
	switch {
	case last == nil, opts.Remediated, last.State != next.State, now.object != "" && now.object != last.object:
		return true, now
	case hidden(last, next, opts.Visible):
		return true, now
	case last.Message == next.Message:
		return false, *last
	case last.remediated:
		now.event, now.at = last.event, last.at // the settled message is not written
		return false, now
	default:
		return true, now
	}
}

// hidden reports whether visible, the status the reader shows, says
// otherwise than next although it is not older than last: then last no
// longer shows, whatever the Recorder remembers. A visible entry older than
// last is the reader lagging behind last, which it will show shortly.
//
// Note: the order is statussync's (newest time, then the greater event
// name), at the second that the API server keeps of an event's time.
func hidden(last *recorded, next Compliance, visible *policyv1.ComplianceHistory) bool {
	if visible == nil || visible.Message == next.EventMessage() {
		return false
	}
	if last.event == "" {
		return true
	}
	lastAt := last.at.Truncate(time.Second)
	switch seen := visible.LastTimestamp.Time; {
	case seen.Before(lastAt):
		return false
	case seen.After(lastAt):
		return true
	default:
		return visible.EventName > last.event
	}
}

// lastRecorded returns the last event of key about the template object
// with the UID object: from memory, or else from the API server (nil when
// there is none).
func (r *Recorder) lastRecorded(ctx context.Context, parent Parent, key recordKey, object types.UID) (*recorded, error) {
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
	return latest(list.Items, object), nil
}

// latest returns the newest parseable compliance event of events that
// counts for the template object with the UID object (Counts), or nil: a
// stale event about another object is no reason to stay silent.
func latest(events []corev1.Event, object types.UID) *recorded {
	var newest *corev1.Event
	for i := range events {
		ev := &events[i]
		if _, err := Parse(ev); err != nil || !Counts(ev, object) {
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
	rec := &recorded{Compliance: c, remediated: newest.Action == ActionRemediate, event: newest.Name, at: eventTime(newest)}
	if newest.Related != nil {
		rec.object = newest.Related.UID
	}
	return rec
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
