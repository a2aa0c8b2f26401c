package statussync

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// setHistory writes status.history of template object obj.
func (l *local) setHistory(obj *policyv1.ConfigurationPolicy, history ...policyv1.HistoryEvent) {
	l.t.Helper()
	obj.Status.History = history
	l.g.Expect(l.c.Status().Update(l.t.Context(), obj)).To(Succeed())
}

// TestLocalTemplateHistoryMerged: the entries of a template's
// status.history join the Policy's history, as OCM's framework addon
// merges them (governance-policy-framework-addon
// controllers/statussync/policy_status_sync.go: getEventsInTemplate names
// an entry "<policy name>.<hexadecimal nanoseconds>", the event-name
// convention, and mergeDetails keeps the newest 10); an entry that repeats
// an event (same message, same time to the microsecond) is not doubled.
func TestLocalTemplateHistoryMerged(t *testing.T) {
	l := newLocal(t)
	p := l.policy("p", "a")
	obj := newTemplate(t, l.c, l.ns, "a", "p")
	older := at(1).Add(123456 * time.Microsecond)   // its event expired
	newer := at(3).Add(654321789 * time.Nanosecond) // its event is there
	l.setHistory(obj,
		policyv1.HistoryEvent{LastTimestamp: metav1.NewMicroTime(newer.Truncate(time.Microsecond)), Message: "NonCompliant; drifted"},
		policyv1.HistoryEvent{LastTimestamp: metav1.NewMicroTime(older), Message: "Compliant; ok"},
		policyv1.HistoryEvent{Message: "Compliant; no time: skipped, as OCM skips it"},
	)
	ev := recordAbout(t, l.c, p, "a", about(obj.UID), policyv1.NonCompliant, "drifted", newer)
	l.g.Eventually(l.status(p)).Should(BeComparableTo(policyv1.PolicyStatus{
		ComplianceState: policyv1.NonCompliant,
		Details: []policyv1.DetailsPerTemplate{{
			TemplateMeta: metav1.ObjectMeta{Name: "a"}, ComplianceState: policyv1.NonCompliant,
			History: []policyv1.ComplianceHistory{entry(ev), {
				LastTimestamp: metav1.NewTime(at(1)), Message: "Compliant; ok",
				EventName: fmt.Sprintf("p.%x", older.UnixNano()),
			}},
		}},
	}))
	l.g.Consistently(l.status(p)).Should(HaveField("Details", HaveExactElements(HaveField("History", HaveLen(2)))))
}

// TestLocalForeignTemplateHistoryIgnored: the history of an object of the
// template's name that belongs to another Policy is not the template's
// (OCM: templateOwnedByPolicy).
func TestLocalForeignTemplateHistoryIgnored(t *testing.T) {
	l := newLocal(t)
	p := l.policy("p", "a")
	obj := newTemplate(t, l.c, l.ns, "a", "other")
	l.setHistory(obj, policyv1.HistoryEvent{LastTimestamp: metav1.NewMicroTime(at(1)), Message: "Compliant; another policy's"})
	waiting := l.record(p, "a", policyv1.NonCompliant, "the name is taken", 2)
	want := policyv1.PolicyStatus{
		ComplianceState: policyv1.NonCompliant,
		Details:         []policyv1.DetailsPerTemplate{detail("a", policyv1.NonCompliant, waiting)},
	}
	l.g.Eventually(l.status(p)).Should(BeComparableTo(want))
	l.g.Consistently(l.status(p)).Should(BeComparableTo(want))
}

// TestTemplateEntries: the pure merge.
func TestTemplateEntries(t *testing.T) {
	g := NewWithT(t)
	ts := at(5).Add(7 * time.Microsecond)
	h := map[string][]policyv1.HistoryEvent{"a": {
		{LastTimestamp: metav1.NewMicroTime(ts), Message: " Compliant; ok "},
		{LastTimestamp: metav1.NewMicroTime(ts), Message: ""},
	}}
	got := TemplateEntries("p", h, nil, nil)
	want := Entry{Template: "a", History: policyv1.ComplianceHistory{LastTimestamp: metav1.NewTime(at(5)).Rfc3339Copy(),
		Message: "Compliant; ok", EventName: fmt.Sprintf("p.%x", ts.UnixNano())}}
	g.Expect(got).To(BeComparableTo([]Entry{want}))

	// Known as an event (nanoseconds in its name) or already in the history.
	event := Entry{Template: "a", History: policyv1.ComplianceHistory{Message: "Compliant; ok",
		EventName: fmt.Sprintf("p.%x", ts.Add(999*time.Nanosecond).UnixNano())}}
	g.Expect(TemplateEntries("p", h, []Entry{event}, nil)).To(BeEmpty())
	g.Expect(TemplateEntries("p", h, nil, []policyv1.DetailsPerTemplate{{TemplateMeta: metav1.ObjectMeta{Name: "a"},
		History: []policyv1.ComplianceHistory{want.History}}})).To(BeEmpty())
	// The same time with another message, or another template's, is news.
	other := event
	other.History.Message = "NonCompliant; drifted"
	g.Expect(TemplateEntries("p", h, []Entry{other}, nil)).To(HaveLen(1))
	event.Template = "b"
	g.Expect(TemplateEntries("p", h, []Entry{event}, nil)).To(HaveLen(1))
}

// TestDetailsEventAfterItsTemplateEntry: when the template's entry reached
// the Policy's history before the event it repeats, the event does not
// double it.
func TestDetailsEventAfterItsTemplateEntry(t *testing.T) {
	g := NewWithT(t)
	ts := at(5).Add(7*time.Microsecond + 300*time.Nanosecond)
	fromTemplate := policyv1.ComplianceHistory{LastTimestamp: metav1.NewTime(at(5)), Message: "Compliant; ok",
		EventName: fmt.Sprintf("p.%x", ts.Truncate(time.Microsecond).UnixNano())}
	event := Entry{Template: "a", History: policyv1.ComplianceHistory{LastTimestamp: metav1.NewTime(at(5)), Message: "Compliant; ok",
		EventName: fmt.Sprintf("p.%x", ts.UnixNano())}}
	previous := []policyv1.DetailsPerTemplate{{TemplateMeta: metav1.ObjectMeta{Name: "a"}, History: []policyv1.ComplianceHistory{fromTemplate}}}
	got := Details([]string{"a"}, []Entry{event}, previous)
	g.Expect(got).To(HaveExactElements(HaveField("History", HaveExactElements(fromTemplate))))
}
