package statussync

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// Template kinds that keep a compliance history in their status (OCM's
// status.history, historyKeeper) have it merged into the Policy's
// history, as OCM's governance-policy-framework-addon merges it
// (controllers/statussync/policy_status_sync.go, getEventsInTemplate and
// mergeDetails): the history outlives the events, which the API server
// drops after an hour.

// historyKeeper is a policy template kind that keeps its compliance
// history in its status, as OCM's status.history (ConfigurationPolicy).
type historyKeeper interface {
	// ComplianceHistory returns status.history, newest first.
	ComplianceHistory() []policyv1.HistoryEvent
}

// TemplateEntries returns the entries of the templates' status.history
// (histories, by template name, of the template objects that exist now and
// are the Policy's) that known (the Policy's compliance events) and
// previous (its status.details) do not hold yet. An entry is named as
// OCM names it, "<policy name>.<its time in hexadecimal nanoseconds>",
// the convention of event names; an entry repeats an event or an earlier
// entry when both have the same message and the same time to the
// microsecond that status.history keeps. Entries without a time or a
// message are skipped, as OCM skips them. Times are kept to the second, as
// the API server keeps them in status.details.
func TemplateEntries(policyName string, histories map[string][]policyv1.HistoryEvent, known []Entry,
	previous []policyv1.DetailsPerTemplate,
) []Entry {
	seen := map[string]bool{}
	for _, e := range known {
		seen[historyKey(e.Template, e.History)] = true
	}
	for _, d := range previous {
		for _, h := range d.History {
			seen[historyKey(d.TemplateMeta.Name, h)] = true
		}
	}
	var out []Entry
	for template, history := range histories {
		for _, h := range history {
			msg := strings.TrimSpace(h.Message)
			if h.LastTimestamp.IsZero() || msg == "" {
				continue
			}
			at := h.LastTimestamp.Time
			e := Entry{Template: template, History: policyv1.ComplianceHistory{
				LastTimestamp: metav1.NewTime(at).Rfc3339Copy(),
				Message:       msg,
				EventName:     fmt.Sprintf("%s.%x", policyName, at.UnixNano()),
			}}
			key := historyKey(template, e.History)
			if seen[key] {
				continue
			}
			seen[key] = true
			out = append(out, e)
		}
	}
	return out
}

// historyKey identifies an entry of a template's history across events and
// status.history: the message and the time in the entry's name, to the
// microsecond (the time itself, to the second, when the name has none).
func historyKey(template string, h policyv1.ComplianceHistory) string {
	at := h.LastTimestamp.Time
	if i := strings.LastIndex(h.EventName, "."); i >= 0 {
		if nanos, err := strconv.ParseInt(h.EventName[i+1:], 16, 64); err == nil {
			at = time.Unix(0, nanos)
		}
	}
	return template + "|" + at.UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano) + "|" + h.Message
}
