package compliance

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
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
	// past holds the compliance events found in the namespaces learned so
	// far that no Record has taken over yet: per stream, the newest event
	// about each related object (Counts decides which one applies).
	past map[recordKey][]corev1.Event
	// learned is one entry per namespace: closed once its events are in
	// past (or learning failed: err says so and the next Record retries).
	learned map[string]*learning
	// forgotten are the streams (by reason) Forget dropped: the next Record
	// of one reads its events from the API server again, as the namespace's
	// learned events no longer hold them.
	forgotten map[string]bool
}

// learning is one namespace's list of past compliance events, done once.
type learning struct {
	done chan struct{}
	err  error
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
	// version is the version of the template object the event reports
	// on (RecordOptions.Version): empty when unknown.
	version string
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
	// Version is the version of the template object that was evaluated
	// (its TemplateHashAnnotation): a report on another version than the
	// last event's is recorded even when it says the same, so that the
	// hub, rolling a change out, sees the change evaluated. Empty when
	// unknown; an event of unknown version is not news by version alone,
	// so that an agent upgraded in place writes nothing new on restart.
	Version string
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
	return &Recorder{writer: writer, reader: reader, source: src, now: time.Now,
		last: map[recordKey]recorded{}, past: map[recordKey][]corev1.Event{}, learned: map[string]*learning{},
		forgotten: map[string]bool{}}
}

// WithClock makes r stamp its events with the time of c instead of the
// machine's, and returns r; call it before r is used. The times of an
// agent's events are the times of its reports on the hub (status.details),
// so tests run an agent whose clock is offset through it.
func (r *Recorder) WithClock(c clock.PassiveClock) *Recorder {
	r.now = c.Now
	return r
}

// Record records c on parent when it is news, and reports whether it wrote
// an event. c is news when it is the template's first event, or the first
// about the object opts.Related names (a recreated template), when it is a
// remediation, when its state differs from the last event's, when it is
// about another version of the template object, when its message does —
// the fix settling too ("was updated" becoming "found as specified"), as
// OCM's controllers report it — or when opts.Visible shows something else,
// newer than the last event.
func (r *Recorder) Record(ctx context.Context, parent Parent, c Compliance, opts RecordOptions) (bool, error) {
	sent, err := r.record(ctx, parent, c, opts)
	return sent != nil, err
}

// Sent is a compliance event a Recorder wrote.
type Sent struct {
	// Name is the event's name.
	Name string
	// At is the event's time, to the nanosecond (the API server keeps
	// seconds of an event's times; its name keeps the nanoseconds).
	At time.Time
	// Message is the event's message, "<State>; <message>".
	Message string
}

// record is Record, returning the event it wrote (nil when none).
func (r *Recorder) record(ctx context.Context, parent Parent, c Compliance, opts RecordOptions) (*Sent, error) {
	key := recordKey{parent: parent.UID, reason: c.Reason()}
	last, err := r.lastRecorded(ctx, parent, key, opts.object())
	if err != nil {
		return nil, err
	}
	emit, remember := decide(last, c, opts)
	var sent *Sent
	if emit {
		at := r.now()
		ev := NewEvent(parent, c, r.source, opts.Related, opts.Remediated, at)
		if opts.Version != "" {
			ev.Annotations = map[string]string{TemplateVersionAnnotation: opts.Version}
		}
		if err := r.writer.Create(ctx, ev); err != nil {
			return nil, fmt.Errorf("creating compliance event %s/%s: %w", ev.Namespace, ev.Name, err)
		}
		remember.event, remember.at = ev.Name, ev.LastTimestamp.Time
		sent = &Sent{Name: ev.Name, At: at, Message: ev.Message}
	}
	r.mu.Lock()
	r.last[key] = remember
	delete(r.past, key) // what the API server had is superseded by memory
	r.mu.Unlock()
	return sent, nil
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
	for key := range r.past {
		if key.reason == reason {
			delete(r.past, key)
		}
	}
	r.forgotten[reason] = true
}

// decide says whether next is news after last (nil: no event known), and
// what to remember afterwards (the caller adds the event it writes).
func decide(last *recorded, next Compliance, opts RecordOptions) (bool, recorded) {
	now := recorded{Compliance: next, remediated: opts.Remediated, object: opts.object(), version: opts.Version}
	switch {
	case last == nil, opts.Remediated, last.State != next.State, now.object != "" && now.object != last.object:
		return true, now
	case now.version != "" && last.version != "" && now.version != last.version:
		return true, now
	case hidden(last, next, opts.Visible):
		return true, now
	case last.Message == next.Message:
		kept := *last
		kept.version = cmp.Or(now.version, last.version)
		return false, kept
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
// with the UID object: from memory, or else from the events the API server
// had in the parent's namespace (nil when there is none).
func (r *Recorder) lastRecorded(ctx context.Context, parent Parent, key recordKey, object types.UID) (*recorded, error) {
	r.mu.Lock()
	last, ok := r.last[key]
	r.mu.Unlock()
	if ok {
		return &last, nil
	}
	if r.wasForgotten(key.reason) {
		last, err := r.listStream(ctx, parent, key, object)
		if err != nil {
			r.mu.Lock()
			r.forgotten[key.reason] = true // read it again next time
			r.mu.Unlock()
		}
		return last, err
	}
	if err := r.learn(ctx, parent.Namespace); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return latest(r.past[key], object), nil
}

// wasForgotten reports whether Forget dropped the stream named reason since
// it was last recorded, and clears the mark.
func (r *Recorder) wasForgotten(reason string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	forgotten := r.forgotten[reason]
	delete(r.forgotten, reason)
	return forgotten
}

// listStream reads the last event of key from the API server alone.
func (r *Recorder) listStream(ctx context.Context, parent Parent, key recordKey, object types.UID) (*recorded, error) {
	list := &corev1.EventList{}
	selector := fields.SelectorFromSet(fields.Set{"involvedObject.uid": string(parent.UID), "reason": key.reason})
	err := r.reader.List(ctx, list, client.InNamespace(parent.Namespace), client.MatchingFieldsSelector{Selector: selector})
	if err != nil {
		return nil, fmt.Errorf("listing the compliance events of policy %s/%s: %w", parent.Namespace, parent.Name, err)
	}
	return latest(list.Items, object), nil
}

// learn reads the past compliance events of namespace once, with one
// paginated list for every template there rather than one per template:
// at start-up, with thousands of templates, a list per first event kept
// the evaluators' workers waiting on the API server. Concurrent callers
// wait for the one list; a failed list is retried by the next caller.
//
// Note: after learning, events about the namespace's Policies come only
// from this Recorder (one agent writes a cluster's events at a time), so
// memory and the learned events together are the whole story.
func (r *Recorder) learn(ctx context.Context, namespace string) error {
	r.mu.Lock()
	l, ok := r.learned[namespace]
	if !ok || (isClosed(l.done) && l.err != nil) {
		l = &learning{done: make(chan struct{})}
		r.learned[namespace] = l
		r.mu.Unlock()
		l.err = r.listPast(ctx, namespace)
		close(l.done)
		return l.err
	}
	r.mu.Unlock()
	select {
	case <-l.done:
		return l.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// listPast adds the compliance events of namespace's Policies to r.past.
func (r *Recorder) listPast(ctx context.Context, namespace string) error {
	selector := fields.SelectorFromSet(fields.Set{"involvedObject.kind": "Policy"})
	opts := []client.ListOption{client.InNamespace(namespace), client.MatchingFieldsSelector{Selector: selector}, client.Limit(500)}
	for cont := ""; ; {
		list := &corev1.EventList{}
		if err := r.reader.List(ctx, list, append(opts, client.Continue(cont))...); err != nil {
			return fmt.Errorf("listing the compliance events of namespace %s: %w", namespace, err)
		}
		r.mu.Lock()
		for i := range list.Items {
			r.keepPast(&list.Items[i])
		}
		r.mu.Unlock()
		if cont = list.Continue; cont == "" {
			return nil
		}
	}
}

// keepPast adds ev to r.past unless its stream is in memory already or an
// event about the same related object is newer; r.mu is held.
func (r *Recorder) keepPast(ev *corev1.Event) {
	if _, err := Parse(ev); err != nil {
		return
	}
	key := recordKey{parent: ev.InvolvedObject.UID, reason: ev.Reason}
	if _, ok := r.last[key]; ok {
		return
	}
	kept := r.past[key]
	for i := range kept {
		if sameRelated(&kept[i], ev) {
			if newer(ev, &kept[i]) {
				kept[i] = trimmed(ev)
			}
			return
		}
	}
	r.past[key] = append(kept, trimmed(ev))
}

// sameRelated reports whether a and b are about the same related object
// (or both about none), which is what Counts tells apart.
func sameRelated(a, b *corev1.Event) bool {
	if a.Related == nil || b.Related == nil {
		return a.Related == nil && b.Related == nil
	}
	return a.Related.UID == b.Related.UID
}

// trimmed keeps of ev what latest reads, so that learning a namespace of
// thousands of events does not hold their whole objects.
func trimmed(ev *corev1.Event) corev1.Event {
	out := corev1.Event{Reason: ev.Reason, Message: ev.Message, Action: ev.Action,
		LastTimestamp: ev.LastTimestamp, EventTime: ev.EventTime}
	out.Name, out.CreationTimestamp = ev.Name, ev.CreationTimestamp
	if v := ev.Annotations[TemplateVersionAnnotation]; v != "" {
		out.Annotations = map[string]string{TemplateVersionAnnotation: v}
	}
	if ev.Related != nil {
		out.Related = &corev1.ObjectReference{UID: ev.Related.UID}
	}
	return out
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
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
	rec := &recorded{Compliance: c, remediated: newest.Action == ActionRemediate, event: newest.Name, at: eventTime(newest),
		version: newest.Annotations[TemplateVersionAnnotation]}
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
