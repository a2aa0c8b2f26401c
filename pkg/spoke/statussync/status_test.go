package statussync

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func event(uid, template, msg string, at int) corev1.Event {
	return corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("p.%016x", at)},
		InvolvedObject: corev1.ObjectReference{UID: types.UID("uid-" + uid)},
		Reason:         "policy: c1/" + template,
		Message:        msg,
		LastTimestamp:  metav1.NewTime(t0.Add(time.Duration(at) * time.Second)),
	}
}

func TestDetailsAndAggregate(t *testing.T) {
	g := NewWithT(t)
	events := []corev1.Event{
		event("a", "t1", "Pending; waiting", 1),
		event("a", "t1", "Compliant; ok", 2),
		event("a", "t2", "NonCompliant; bad", 3),
		event("b", "t1", "NonCompliant; another policy's", 4), // other UID: ignored
		{ObjectMeta: metav1.ObjectMeta{Name: "x"}, InvolvedObject: corev1.ObjectReference{UID: "uid-a"}, Reason: "Created"},
	}
	entries := Entries("uid-a", events)
	g.Expect(entries).To(HaveLen(3))
	details := Details([]string{"t1", "t2", "t3"}, entries, nil)
	g.Expect(details).To(HaveLen(3))
	g.Expect(details[0].ComplianceState).To(Equal(policyv1.Compliant))
	g.Expect(details[0].History).To(HaveLen(2))
	g.Expect(details[0].History[0].Message).To(Equal("Compliant; ok"))
	g.Expect(details[1].ComplianceState).To(Equal(policyv1.NonCompliant))
	g.Expect(details[2].History).To(BeEmpty())

	// Merging again with the previous status changes nothing (idempotent).
	g.Expect(Details([]string{"t1", "t2", "t3"}, entries, details)).To(Equal(details))
	// History survives the events' expiry.
	g.Expect(Details([]string{"t1", "t2", "t3"}, nil, details)).To(Equal(details))
	// Removed templates are dropped.
	g.Expect(Details([]string{"t2"}, entries, details)).To(HaveLen(1))
}

func TestHistoryIsBounded(t *testing.T) {
	g := NewWithT(t)
	var events []corev1.Event
	for i := range 25 {
		events = append(events, event("a", "t1", fmt.Sprintf("NonCompliant; try %d", i), i))
	}
	d := Details([]string{"t1"}, Entries("uid-a", events), nil)
	g.Expect(d[0].History).To(HaveLen(HistoryLimit))
	g.Expect(d[0].History[0].Message).To(Equal("NonCompliant; try 24"))
	g.Expect(d[0].History[HistoryLimit-1].Message).To(Equal("NonCompliant; try 15"))
}

func TestPolicyCompliance(t *testing.T) {
	d := func(states ...policyv1.ComplianceState) []policyv1.DetailsPerTemplate {
		var out []policyv1.DetailsPerTemplate
		for _, s := range states {
			out = append(out, policyv1.DetailsPerTemplate{ComplianceState: s})
		}
		return out
	}
	for _, tc := range []struct {
		in   []policyv1.DetailsPerTemplate
		want policyv1.ComplianceState
	}{
		{d(policyv1.Compliant, policyv1.Pending, policyv1.NonCompliant), policyv1.NonCompliant},
		{d(policyv1.Compliant, policyv1.Pending), policyv1.Pending},
		{d(policyv1.Pending, ""), policyv1.Pending},
		{d(policyv1.Compliant, policyv1.Compliant), policyv1.Compliant},
		{d(policyv1.Compliant, ""), ""},
		{d(""), ""}, // a template has not reported
		{d(policyv1.Compliant, "Terminating"), ""},
		{nil, policyv1.Compliant}, // no templates: nothing to violate
	} {
		NewWithT(t).Expect(PolicyCompliance(tc.in)).To(Equal(tc.want), fmt.Sprint(tc.in))
	}
}

// TestEntries: a compliance event of the Policy becomes one history entry
// of its template, timed by lastTimestamp, else eventTime, else
// creationTimestamp; events of other Policies, other reasons and malformed
// compliance events are skipped.
func TestEntries(t *testing.T) {
	at := func(s int) metav1.Time { return metav1.NewTime(t0.Add(time.Duration(s) * time.Second)) }
	with := func(ev corev1.Event, change func(*corev1.Event)) corev1.Event {
		change(&ev)
		return ev
	}
	untimed := with(event("a", "t1", "Compliant; ok", 0), func(ev *corev1.Event) { ev.LastTimestamp = metav1.Time{} })
	for _, tc := range []struct {
		name string
		ev   corev1.Event
		want []Entry
	}{
		{"compliance event", event("a", "t1", "NonCompliant; bad", 1),
			[]Entry{{Template: "t1", History: policyv1.ComplianceHistory{LastTimestamp: at(1), Message: "NonCompliant; bad", EventName: "p.0000000000000001"}}}},
		{"state alone", event("a", "t2", "Pending", 2),
			[]Entry{{Template: "t2", History: policyv1.ComplianceHistory{LastTimestamp: at(2), Message: "Pending", EventName: "p.0000000000000002"}}}},
		{"eventTime without lastTimestamp", with(untimed, func(ev *corev1.Event) { ev.EventTime = metav1.NewMicroTime(at(3).Time) }),
			[]Entry{{Template: "t1", History: policyv1.ComplianceHistory{LastTimestamp: at(3), Message: "Compliant; ok", EventName: untimed.Name}}}},
		{"creationTimestamp without either", with(untimed, func(ev *corev1.Event) { ev.CreationTimestamp = at(4) }),
			[]Entry{{Template: "t1", History: policyv1.ComplianceHistory{LastTimestamp: at(4), Message: "Compliant; ok", EventName: untimed.Name}}}},
		{"another policy's", event("b", "t1", "NonCompliant; bad", 1), nil},
		{"not a compliance event", with(event("a", "t1", "Compliant; ok", 1), func(ev *corev1.Event) { ev.Reason = "Created" }), nil},
		{"reason without namespace", with(event("a", "t1", "Compliant; ok", 1), func(ev *corev1.Event) { ev.Reason = "policy: t1" }), nil},
		{"unknown state", event("a", "t1", "Unknown; what", 1), nil},
		{"no space after the state", event("a", "t1", "Compliant;ok", 1), nil},
		{"empty message", event("a", "t1", "", 1), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(Entries("uid-a", []corev1.Event{tc.ev})).To(Equal(tc.want))
		})
	}
}

// TestDetails: one entry per template of the spec, in spec order; history
// is the previous history and the new entries, once per event, newest
// first (the later event name first at equal times), at most HistoryLimit
// long; a template's compliance is its newest entry's.
func TestDetails(t *testing.T) {
	h := func(name, msg string, s int) policyv1.ComplianceHistory {
		return policyv1.ComplianceHistory{LastTimestamp: metav1.NewTime(t0.Add(time.Duration(s) * time.Second)), Message: msg, EventName: name}
	}
	d := func(name string, state policyv1.ComplianceState, history ...policyv1.ComplianceHistory) policyv1.DetailsPerTemplate {
		return policyv1.DetailsPerTemplate{TemplateMeta: metav1.ObjectMeta{Name: name}, ComplianceState: state, History: history}
	}
	e := func(template string, history policyv1.ComplianceHistory) Entry {
		return Entry{Template: template, History: history}
	}
	var many []Entry
	var newest []policyv1.ComplianceHistory
	for i := range HistoryLimit + 3 {
		many = append(many, e("a", h(fmt.Sprintf("e%02d", i), "NonCompliant; try", i)))
	}
	for i := HistoryLimit + 2; i >= 3; i-- {
		newest = append(newest, h(fmt.Sprintf("e%02d", i), "NonCompliant; try", i))
	}
	for _, tc := range []struct {
		name      string
		templates []string
		entries   []Entry
		previous  []policyv1.DetailsPerTemplate
		want      []policyv1.DetailsPerTemplate
	}{
		{name: "spec order", templates: []string{"b", "a"},
			entries: []Entry{e("a", h("e1", "Compliant; ok", 1)), e("b", h("e2", "NonCompliant; bad", 2))},
			want:    []policyv1.DetailsPerTemplate{d("b", policyv1.NonCompliant, h("e2", "NonCompliant; bad", 2)), d("a", policyv1.Compliant, h("e1", "Compliant; ok", 1))}},
		{name: "template not reported", templates: []string{"a"}, want: []policyv1.DetailsPerTemplate{d("a", "")}},
		{name: "no templates", templates: nil, entries: []Entry{e("a", h("e1", "Compliant; ok", 1))}, want: []policyv1.DetailsPerTemplate{}},
		{name: "entries of templates not in the spec", templates: []string{"a"},
			entries: []Entry{e("z", h("e1", "NonCompliant; bad", 1))}, want: []policyv1.DetailsPerTemplate{d("a", "")}},
		{name: "newest first", templates: []string{"a"},
			entries: []Entry{e("a", h("e1", "NonCompliant; 1", 1)), e("a", h("e3", "Pending; 3", 3)), e("a", h("e2", "Compliant; 2", 2))},
			want:    []policyv1.DetailsPerTemplate{d("a", policyv1.Pending, h("e3", "Pending; 3", 3), h("e2", "Compliant; 2", 2), h("e1", "NonCompliant; 1", 1))}},
		{name: "same time: later name first", templates: []string{"a"},
			entries: []Entry{e("a", h("p.02", "Compliant; 2", 1)), e("a", h("p.01", "NonCompliant; 1", 1))},
			want:    []policyv1.DetailsPerTemplate{d("a", policyv1.Compliant, h("p.02", "Compliant; 2", 1), h("p.01", "NonCompliant; 1", 1))}},
		{name: "same event once", templates: []string{"a"},
			entries:  []Entry{e("a", h("e1", "Compliant; ok", 1)), e("a", h("e1", "Compliant; ok", 1))},
			previous: []policyv1.DetailsPerTemplate{d("a", policyv1.Compliant, h("e1", "Compliant; ok", 1))},
			want:     []policyv1.DetailsPerTemplate{d("a", policyv1.Compliant, h("e1", "Compliant; ok", 1))}},
		{name: "nameless entries: once per time and message", templates: []string{"a"},
			entries: []Entry{e("a", h("", "Compliant; ok", 1)), e("a", h("", "Compliant; ok", 1)), e("a", h("", "NonCompliant; bad", 1))},
			want:    []policyv1.DetailsPerTemplate{d("a", policyv1.Compliant, h("", "Compliant; ok", 1), h("", "NonCompliant; bad", 1))}},
		{name: "history outlives its events", templates: []string{"a"},
			entries:  []Entry{e("a", h("e2", "Compliant; ok", 2))},
			previous: []policyv1.DetailsPerTemplate{d("a", policyv1.NonCompliant, h("e1", "NonCompliant; bad", 1))},
			want:     []policyv1.DetailsPerTemplate{d("a", policyv1.Compliant, h("e2", "Compliant; ok", 2), h("e1", "NonCompliant; bad", 1))}},
		{name: "an older event arriving late", templates: []string{"a"},
			entries:  []Entry{e("a", h("e1", "NonCompliant; bad", 1))},
			previous: []policyv1.DetailsPerTemplate{d("a", policyv1.Compliant, h("e2", "Compliant; ok", 2))},
			want:     []policyv1.DetailsPerTemplate{d("a", policyv1.Compliant, h("e2", "Compliant; ok", 2), h("e1", "NonCompliant; bad", 1))}},
		{name: "at most HistoryLimit, the newest", templates: []string{"a"}, entries: many,
			want: []policyv1.DetailsPerTemplate{d("a", policyv1.NonCompliant, newest...)}},
		{name: "removed template dropped", templates: []string{"b"},
			previous: []policyv1.DetailsPerTemplate{d("a", policyv1.Compliant, h("e1", "Compliant; ok", 1)), d("b", policyv1.NonCompliant, h("e2", "NonCompliant; bad", 2))},
			want:     []policyv1.DetailsPerTemplate{d("b", policyv1.NonCompliant, h("e2", "NonCompliant; bad", 2))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(Details(tc.templates, tc.entries, tc.previous)).To(Equal(tc.want))
		})
	}
}

// TestTemplateNames: the names of the templates in spec order, once each,
// skipping definitions that are not objects or have no name.
func TestTemplateNames(t *testing.T) {
	tmpl := func(raw string) policyv1.PolicyTemplate {
		return policyv1.PolicyTemplate{ObjectDefinition: runtime.RawExtension{Raw: []byte(raw)}}
	}
	named := func(name string) policyv1.PolicyTemplate {
		return tmpl(`{"apiVersion":"policy.open-cluster-management.io/v1","kind":"ConfigurationPolicy","metadata":{"name":"` + name + `"}}`)
	}
	for _, tc := range []struct {
		name      string
		templates []policyv1.PolicyTemplate
		want      []string
	}{
		{"none", nil, nil},
		{"spec order", []policyv1.PolicyTemplate{named("b"), named("a"), named("c")}, []string{"b", "a", "c"}},
		{"once each", []policyv1.PolicyTemplate{named("a"), named("b"), named("a")}, []string{"a", "b"}},
		{"not an object", []policyv1.PolicyTemplate{tmpl(`[1]`), named("a")}, []string{"a"}},
		{"no name", []policyv1.PolicyTemplate{tmpl(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{}}`), named("a")}, []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &policyv1.Policy{Spec: policyv1.PolicySpec{PolicyTemplates: tc.templates}}
			NewWithT(t).Expect(TemplateNames(p)).To(Equal(tc.want))
		})
	}
}

// TestEventToPolicy: an event triggers the Policy it is about, and nothing
// when it is about anything else, a Policy of another API group included.
func TestEventToPolicy(t *testing.T) {
	ref := func(apiVersion, kind string) *corev1.Event {
		return &corev1.Event{InvolvedObject: corev1.ObjectReference{APIVersion: apiVersion, Kind: kind, Namespace: "ns", Name: "p", UID: "uid-a"}}
	}
	want := []ctrl.Request{{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "p"}}}
	for _, tc := range []struct {
		ev   *corev1.Event
		want []ctrl.Request
	}{
		{ref(policyv1.GroupVersion.String(), "Policy"), want},
		{ref(policyv1.GroupName+"/v1beta1", "Policy"), want},
		{ref(policyv1.GroupVersion.String(), "ConfigurationPolicy"), nil},
		{ref(policyv1.GroupVersion.String(), "PolicySet"), nil},
		{ref("policy/v1", "Policy"), nil},
		{ref("v1", "Policy"), nil},
		{ref("", ""), nil},
	} {
		NewWithT(t).Expect(eventToPolicy(t.Context(), tc.ev)).To(Equal(tc.want), "%+v", tc.ev.InvolvedObject)
	}
}
