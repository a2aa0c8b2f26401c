package history

import (
	"slices"
	"time"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/compliance"
	"github.com/canopy-policy/canopy/pkg/history"
)

// HistoryLimit is how many events a replica's status holds per template:
// the agent's statussync.HistoryLimit (and OCM's framework addon's). A
// history this long may have lost older events.
const HistoryLimit = 10

// planInput is what plan reads about one replica.
type planInput struct {
	// Hub is the recording hub's name.
	Hub string
	// Cluster is the replica's cluster.
	Cluster string
	// Policy is the replica's root policy.
	Policy history.Policy
	// Created is when the replica was created: no event of it is older.
	Created time.Time
	// Details is the replica's status.details.
	Details []policyv1.DetailsPerTemplate
	// Latest is, per template, the newest event already stored.
	Latest map[string]time.Time
	// Cutoff drops events older than it (the retention).
	Cutoff time.Time
}

// plan returns the transitions of a replica's history not older than what
// is stored, and a gap for each template whose full history begins after
// the newest event stored (or after the replica's creation, when none is).
func plan(in planInput) ([]history.Transition, []history.Gap) {
	var transitions []history.Transition
	var gaps []history.Gap
	for _, d := range in.Details {
		template := d.TemplateMeta.Name
		latest, stored := in.Latest[template]
		var oldest time.Time
		for _, h := range d.History {
			at := h.LastTimestamp.UTC()
			if oldest.IsZero() || at.Before(oldest) {
				oldest = at
			}
			if (stored && at.Before(latest)) || at.Before(in.Cutoff) {
				continue
			}
			state, message, err := compliance.ParseMessage(h.Message)
			if err != nil {
				continue // not a compliance message: nothing to record
			}
			transitions = append(transitions, history.Transition{
				Hub: in.Hub, Cluster: in.Cluster, Policy: in.Policy, Template: template,
				State: string(state), Message: message, At: at,
			})
		}
		if len(d.History) < HistoryLimit {
			continue
		}
		from := in.Created.UTC()
		if stored {
			from = latest
		}
		if oldest.After(from) && !oldest.Before(in.Cutoff) {
			gaps = append(gaps, history.Gap{
				Hub: in.Hub, Cluster: in.Cluster, Policy: in.Policy, Template: template, From: from, To: oldest,
			})
		}
	}
	return transitions, gaps
}

// newest returns, per template, the newest event time among transitions,
// merged into latest.
func newest(latest map[string]time.Time, transitions []history.Transition) map[string]time.Time {
	out := make(map[string]time.Time, len(latest))
	for k, v := range latest {
		out[k] = v
	}
	for _, t := range transitions {
		if t.At.After(out[t.Template]) {
			out[t.Template] = t.At
		}
	}
	return out
}

// merge returns a with the transitions of b it does not hold appended.
func merge(a, b []history.Transition) []history.Transition {
	if len(a) == 0 {
		return b
	}
	seen := make(map[history.Transition]bool, len(a))
	for _, t := range a {
		seen[t] = true
	}
	for _, t := range b {
		if !seen[t] {
			a = append(a, t)
		}
	}
	return a
}

// deletionGaps returns, for a replica that changed after the hub last read
// it and was deleted before the hub read it again, a gap per template it
// knows of (latest: the newest event known per template), from that event
// to when the deletion was seen: what happened in between cannot be known.
func deletionGaps(hub, cluster string, policy history.Policy, latest map[string]time.Time, deleted time.Time) []history.Gap {
	templates := make([]string, 0, len(latest))
	for template := range latest {
		templates = append(templates, template)
	}
	slices.Sort(templates)
	var gaps []history.Gap
	for _, template := range templates {
		if from := latest[template]; from.Before(deleted) {
			gaps = append(gaps, history.Gap{Hub: hub, Cluster: cluster, Policy: policy, Template: template, From: from, To: deleted.UTC()})
		}
	}
	return gaps
}
