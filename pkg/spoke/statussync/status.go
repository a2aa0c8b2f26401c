package statussync

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/compliance"
)

// HistoryLimit is the number of history entries kept per template.
const HistoryLimit = 10

// Entry is one compliance event of a Policy.
type Entry struct {
	// Template is the template's name.
	Template string
	// History is the event as it appears in status.
	History policyv1.ComplianceHistory
}

// CurrentEvents splits the compliance events of the Policy with uid among
// events into those that count for their template (compliance.Counts) given
// objects, the UID of each template's object that exists now, by template
// name (absent: none), and the ignored ones: stale, about an object that is
// not the template's now. Other events and malformed ones are in neither.
func CurrentEvents(uid string, events []corev1.Event, objects map[string]types.UID) (current []corev1.Event, ignored []*corev1.Event) {
	for i := range events {
		ev := &events[i]
		if string(ev.InvolvedObject.UID) != uid {
			continue
		}
		c, err := compliance.Parse(ev)
		switch {
		case err != nil:
		case compliance.Counts(ev, objects[c.Template.Name]):
			current = append(current, *ev)
		default:
			ignored = append(ignored, ev)
		}
	}
	return current, ignored
}

// Entries returns the compliance events of events that belong to the Policy
// with uid, skipping other events and malformed ones.
func Entries(uid string, events []corev1.Event) []Entry {
	var out []Entry
	for i := range events {
		ev := &events[i]
		if string(ev.InvolvedObject.UID) != uid {
			continue
		}
		c, err := compliance.Parse(ev)
		if err != nil {
			continue
		}
		out = append(out, Entry{Template: c.Template.Name, History: policyv1.ComplianceHistory{
			LastTimestamp: eventTime(ev),
			Message:       ev.Message,
			EventName:     ev.Name,
		}})
	}
	return out
}

func eventTime(ev *corev1.Event) metav1.Time {
	switch {
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp
	case !ev.EventTime.IsZero():
		return metav1.NewTime(ev.EventTime.Time)
	default:
		return ev.CreationTimestamp
	}
}

// Details returns status.details for templates (names, in spec order):
// each template's history is its previous history united with entries,
// deduplicated by event name, newest first, at most HistoryLimit long; its
// compliance is that of the newest entry. An entry stays once it is in the
// history, also when its template object is gone since: it was true when it
// came. (One that came in a race with its object's deletion can hide a
// newer Pending; templatesync then records that again.)
func Details(templates []string, entries []Entry, previous []policyv1.DetailsPerTemplate) []policyv1.DetailsPerTemplate {
	byTemplate := map[string][]policyv1.ComplianceHistory{}
	for _, d := range previous {
		byTemplate[d.TemplateMeta.Name] = append(byTemplate[d.TemplateMeta.Name], d.History...)
	}
	for _, e := range entries {
		byTemplate[e.Template] = append(byTemplate[e.Template], e.History)
	}
	out := make([]policyv1.DetailsPerTemplate, 0, len(templates))
	for _, name := range templates {
		history := sortHistory(byTemplate[name])
		d := policyv1.DetailsPerTemplate{TemplateMeta: metav1.ObjectMeta{Name: name}, History: history}
		if len(history) > 0 {
			d.ComplianceState, _, _ = compliance.ParseMessage(history[0].Message)
		}
		out = append(out, d)
	}
	return out
}

// sortHistory deduplicates h by message and the time in the event name to
// the microsecond (the time when a name is missing; historyKey), so that
// an event and the template's status.history entry that repeats it count
// once, whichever came first; it sorts h newest first and cuts it to
// HistoryLimit.
func sortHistory(h []policyv1.ComplianceHistory) []policyv1.ComplianceHistory {
	seen := map[string]bool{}
	var out []policyv1.ComplianceHistory
	for _, e := range h {
		key := historyKey("", e)
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, e)
	}
	slices.SortStableFunc(out, func(a, b policyv1.ComplianceHistory) int {
		if !a.LastTimestamp.Equal(&b.LastTimestamp) {
			return b.LastTimestamp.Compare(a.LastTimestamp.Time)
		}
		return strings.Compare(b.EventName, a.EventName)
	})
	if len(out) > HistoryLimit {
		out = out[:HistoryLimit]
	}
	return out
}

// PolicyCompliance returns the compliance of a Policy from its templates':
// compliance.Aggregate of their states (any NonCompliant → NonCompliant;
// else any Pending → Pending; else Compliant when every template is
// Compliant; else "" unknown).
func PolicyCompliance(details []policyv1.DetailsPerTemplate) policyv1.ComplianceState {
	if len(details) == 0 {
		// Not compliance.Aggregate's unknown: a Policy without templates has
		// nothing to violate, and OCM's framework addon reports it Compliant.
		return policyv1.Compliant
	}
	states := make([]policyv1.ComplianceState, 0, len(details))
	for _, d := range details {
		states = append(states, d.ComplianceState)
	}
	return compliance.Aggregate(states...)
}
