package history

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/history"
)

func TestPlan(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Minute) }
	// events returns a history of events from..to-1, newest first.
	events := func(from, to int) []policyv1.ComplianceHistory {
		var h []policyv1.ComplianceHistory
		for i := to - 1; i >= from; i-- {
			h = append(h, policyv1.ComplianceHistory{LastTimestamp: metav1.NewTime(at(i)), Message: fmt.Sprintf("Compliant; e%d", i)})
		}
		return h
	}
	p := history.Policy{Namespace: "ns", Name: "p"}
	tr := func(i int) history.Transition {
		return history.Transition{Hub: "h", Cluster: "c", Policy: p, Template: "cfg", State: "Compliant", Message: fmt.Sprintf("e%d", i), At: at(i)}
	}
	gap := func(from, to time.Time) history.Gap {
		return history.Gap{Hub: "h", Cluster: "c", Policy: p, Template: "cfg", From: from, To: to}
	}
	for _, tc := range []struct {
		name        string
		history     []policyv1.ComplianceHistory
		latest      map[string]time.Time
		cutoff      time.Time
		transitions []history.Transition
		gaps        []history.Gap
	}{
		{name: "nothing stored, short history: all of it", history: events(0, 3), transitions: []history.Transition{tr(2), tr(1), tr(0)}},
		{name: "only what is not older than the newest stored", history: events(0, 3), latest: map[string]time.Time{"cfg": at(1)},
			transitions: []history.Transition{tr(2), tr(1)}},
		{name: "full history reaching back to what is stored: no gap", history: events(5, 15), latest: map[string]time.Time{"cfg": at(5)},
			transitions: []history.Transition{tr(14), tr(13), tr(12), tr(11), tr(10), tr(9), tr(8), tr(7), tr(6), tr(5)}},
		{name: "full history beginning after what is stored: a gap", history: events(7, 17), latest: map[string]time.Time{"cfg": at(1)},
			transitions: []history.Transition{tr(16), tr(15), tr(14), tr(13), tr(12), tr(11), tr(10), tr(9), tr(8), tr(7)},
			gaps:        []history.Gap{gap(at(1), at(7))}},
		{name: "full history, nothing stored: a gap since the replica's creation", history: events(7, 17),
			transitions: []history.Transition{tr(16), tr(15), tr(14), tr(13), tr(12), tr(11), tr(10), tr(9), tr(8), tr(7)},
			gaps:        []history.Gap{gap(at(-60), at(7))}},
		{name: "older than the retention: dropped", history: events(0, 3), cutoff: at(2), transitions: []history.Transition{tr(2)}},
		{name: "not a compliance message: skipped", history: []policyv1.ComplianceHistory{{LastTimestamp: metav1.NewTime(at(0)), Message: "garbage"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			transitions, gaps := plan(planInput{
				Hub: "h", Cluster: "c", Policy: p, Created: at(-60), Latest: tc.latest, Cutoff: tc.cutoff,
				Details: []policyv1.DetailsPerTemplate{{TemplateMeta: metav1.ObjectMeta{Name: "cfg"}, History: tc.history}},
			})
			g.Expect(transitions).To(Equal(tc.transitions))
			g.Expect(gaps).To(Equal(tc.gaps))
		})
	}
}

// TestPendingDeleted checks what the recorder stores of a replica deleted
// before what it read of it was stored: what it read, and a gap from the
// newest event known to the deletion when the replica changed after that
// read.
func TestPendingDeleted(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	key := types.NamespacedName{Namespace: "c", Name: "ns.p"}
	p := history.Policy{Namespace: "ns", Name: "p"}
	read := planInput{Hub: "h", Cluster: "c", Policy: p, Created: t0, Details: []policyv1.DetailsPerTemplate{{
		TemplateMeta: metav1.ObjectMeta{Name: "cfg"},
		History:      []policyv1.ComplianceHistory{{LastTimestamp: metav1.NewTime(t0.Add(time.Minute)), Message: "Compliant; ok"}},
	}}}
	tr := history.Transition{Hub: "h", Cluster: "c", Policy: p, Template: "cfg", State: "Compliant", Message: "ok", At: t0.Add(time.Minute)}
	for _, tc := range []struct {
		name        string
		changeAfter bool // the replica changed after the read
		gaps        int
	}{
		{name: "read, then deleted: what was read, no gap"},
		{name: "read, changed, then deleted: what was read and a gap", changeAfter: true, gaps: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			r := &Recorder{HubName: "h", latest: map[types.NamespacedName]map[string]time.Time{},
				pending: map[types.NamespacedName]*pendingReplica{}, stalled: map[types.NamespacedName]bool{}}
			r.loaded.Store(true)
			r.changed(key)
			seen, ok := r.unread(key)
			g.Expect(ok).To(BeTrue())
			r.setRead(key, seen, read)
			if tc.changeAfter {
				r.changed(key)
			}
			r.deleteSeen(key)
			seen, ok = r.unread(key)
			g.Expect(ok).To(BeTrue(), "a deleted replica is read again")
			before := time.Now()
			r.gone(key, seen)
			transitions, gaps, ok := r.planPending(key)
			g.Expect(ok).To(BeTrue())
			g.Expect(transitions).To(Equal([]history.Transition{tr}))
			g.Expect(gaps).To(HaveLen(tc.gaps))
			for _, gap := range gaps {
				g.Expect(gap.From).To(Equal(t0.Add(time.Minute)), "from the newest event known")
				g.Expect(gap.To).To(BeTemporally(">=", before), "to the deletion")
			}
			r.stored(key, transitions)
			g.Expect(r.pending).To(BeEmpty(), "nothing waits once stored")
			g.Expect(r.latest).To(BeEmpty(), "a deleted replica is forgotten")
		})
	}
}
