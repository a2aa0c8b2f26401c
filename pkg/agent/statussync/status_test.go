package statussync

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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
		{d(policyv1.Compliant, "Terminating"), ""},
		{nil, policyv1.Compliant}, // no templates: nothing to violate
	} {
		NewWithT(t).Expect(PolicyCompliance(tc.in)).To(Equal(tc.want), fmt.Sprint(tc.in))
	}
}
