package compliance

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// TestCounts: an evaluator's event counts while the object it is about is
// the current one; templatesync's always; one that names no object only
// while a template object exists.
func TestCounts(t *testing.T) {
	cfg := policyv1.GroupVersion.WithKind("ConfigurationPolicy")
	about := func(uid types.UID) *corev1.Event {
		return &corev1.Event{Related: &corev1.ObjectReference{Kind: "ConfigurationPolicy", Name: "t", UID: uid}}
	}
	templatesync := &corev1.Event{Related: TemplateRef(cfg, "ns", "t")}
	anonymous := &corev1.Event{}
	for _, tc := range []struct {
		name    string
		ev      *corev1.Event
		current types.UID
		want    bool
	}{
		{"about the current object", about("x"), "x", true},
		{"about a deleted object, the template recreated", about("w"), "x", false},
		{"about a deleted object, the template absent", about("w"), "", false},
		{"about a foreign object", about("foreign"), "x", false},
		{"templatesync's, the template absent", templatesync, "", true},
		{"templatesync's, the template present", templatesync, "x", true},
		{"no related object, the template present", anonymous, "x", true},
		{"no related object, the template absent", anonymous, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(Counts(tc.ev, tc.current)).To(Equal(tc.want))
		})
	}
}

func TestTemplateRef(t *testing.T) {
	g := NewWithT(t)
	g.Expect(TemplateRef(policyv1.GroupVersion.WithKind("ConfigurationPolicy"), "ns", "t")).To(Equal(&corev1.ObjectReference{
		APIVersion: "policy.open-cluster-management.io/v1", Kind: "ConfigurationPolicy", Namespace: "ns", Name: "t",
	}))
	g.Expect(TemplateRef(schema.GroupVersionKind{}, "ns", "t")).To(Equal(&corev1.ObjectReference{Namespace: "ns", Name: "t"}))
}

// TestDecideWithStatus: what is news after the last event known, the
// object reported on and the status the reader shows included.
func TestDecideWithStatus(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 10, 500_000_000, time.UTC)
	pending := Compliance{Template: tmpl, State: policyv1.Pending, Message: "Dependencies were not satisfied: 1 is still pending (Policy a)"}
	compliant := Compliance{Template: tmpl, State: policyv1.Compliant, Message: "ok"}
	lastPending := &recorded{Compliance: pending, event: "p.00000000000000b0", at: t0}
	seen := func(c Compliance, name string, s int) *policyv1.ComplianceHistory {
		return &policyv1.ComplianceHistory{Message: c.EventMessage(), EventName: name,
			LastTimestamp: metav1.NewTime(t0.Truncate(time.Second).Add(time.Duration(s) * time.Second))}
	}
	for _, tc := range []struct {
		name string
		last *recorded
		next Compliance
		opts RecordOptions
		want bool
	}{
		{name: "first event", next: pending, want: true},
		{name: "same again", last: lastPending, next: pending},
		{name: "state changed", last: lastPending, next: compliant, want: true},
		{name: "remediation", last: &recorded{Compliance: compliant}, next: compliant, opts: RecordOptions{Remediated: true}, want: true},
		{name: "the first report on a recreated object", last: &recorded{Compliance: compliant, object: "w"}, next: compliant,
			opts: RecordOptions{Related: &corev1.ObjectReference{UID: "x"}}, want: true},
		{name: "the first report on an object after templatesync's", last: &recorded{Compliance: compliant}, next: compliant,
			opts: RecordOptions{Related: &corev1.ObjectReference{UID: "x"}}, want: true},
		{name: "the status shows it", last: lastPending, next: pending,
			opts: RecordOptions{Visible: seen(pending, lastPending.event, 0)}},
		{name: "the status shows something newer", last: lastPending, next: pending,
			opts: RecordOptions{Visible: seen(compliant, "stale", 1)}, want: true},
		{name: "the status shows something later in the same second", last: lastPending, next: pending,
			opts: RecordOptions{Visible: seen(compliant, "p.00000000000000c0", 0)}, want: true},
		{name: "the status lags behind, the same second", last: lastPending, next: pending,
			opts: RecordOptions{Visible: seen(compliant, "p.00000000000000a0", 0)}},
		{name: "the status lags behind", last: lastPending, next: pending,
			opts: RecordOptions{Visible: seen(compliant, "earlier", -1)}},
		{name: "no status yet", last: lastPending, next: pending, opts: RecordOptions{Visible: nil}},
		{name: "the status shows something else, the last event unknown", last: &recorded{Compliance: pending}, next: pending,
			opts: RecordOptions{Visible: seen(compliant, "x", -5)}, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := decide(tc.last, tc.next, tc.opts)
			NewWithT(t).Expect(got).To(Equal(tc.want))
		})
	}
}

// TestLatestSkipsStaleEvents: after a restart, a Recorder goes on from the
// last event that counts for the object it reports on.
func TestLatestSkipsStaleEvents(t *testing.T) {
	g := NewWithT(t)
	at := func(s int) metav1.Time { return metav1.NewTime(time.Date(2026, 1, 1, 0, 0, s, 0, time.UTC)) }
	ev := func(name, msg string, s int, related *corev1.ObjectReference) corev1.Event {
		return corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name}, Reason: "policy: ns/t", Message: msg, LastTimestamp: at(s), Related: related}
	}
	events := []corev1.Event{
		ev("pending", "Pending; waiting", 1, TemplateRef(policyv1.GroupVersion.WithKind("ConfigurationPolicy"), "ns", "t")),
		ev("anonymous", "Compliant; ok", 2, nil),
		ev("stale", "Compliant; ok", 3, &corev1.ObjectReference{UID: "w"}),
	}
	last := latest(events, "")
	g.Expect(last).NotTo(BeNil())
	g.Expect(last.event).To(Equal("pending"))
	g.Expect(last.State).To(Equal(policyv1.Pending))
	g.Expect(latest(events, "w").event).To(Equal("stale"))
	g.Expect(latest(events, "x").event).To(Equal("anonymous"))
}
