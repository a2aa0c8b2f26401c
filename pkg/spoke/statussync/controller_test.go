package statussync

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
)

// local is one local controller test: its namespace on the managed cluster,
// with the local status controller running for it.
type local struct {
	t  *testing.T
	g  Gomega
	c  client.Client // managed administrator
	ns string
}

// newLocal runs the test in parallel, in a new namespace of the managed
// cluster with the local status controller restricted to it.
func newLocal(t *testing.T) *local {
	t.Parallel()
	c := suite.Get(t).Managed[0].Client
	l := &local{t: t, g: NewWithT(t), c: c, ns: controlplane.Namespace(t, c)}
	startLocal(t, l.ns, true)
	return l
}

// policy creates Policy name with templates in the test's namespace.
func (l *local) policy(name string, templates ...string) *policyv1.Policy {
	l.t.Helper()
	p := newPolicy(l.ns, name, templates...)
	create(l.t, l.c, p)
	return p
}

// record creates a compliance event of template of p at second s.
func (l *local) record(p *policyv1.Policy, template string, state policyv1.ComplianceState, msg string, s int) *corev1.Event {
	l.t.Helper()
	return record(l.t, l.c, p, template, state, msg, at(s))
}

// status reads p's status.
func (l *local) status(p *policyv1.Policy) func(Gomega) policyv1.PolicyStatus {
	return status(l.t, l.c, p)
}

// TestLocalStatusFromEvents: the status has one detail per template in spec
// order, each with its events newest first and the compliance of the newest;
// the Policy is unknown ("") while a template has not reported, then
// NonCompliant over Pending over Compliant.
func TestLocalStatusFromEvents(t *testing.T) {
	l := newLocal(t)
	p := l.policy("p", "b", "a")
	l.g.Eventually(l.status(p)).Should(BeComparableTo(policyv1.PolicyStatus{
		Details: []policyv1.DetailsPerTemplate{detail("b", ""), detail("a", "")},
	}))

	a1 := l.record(p, "a", policyv1.Compliant, "ok", 1)
	l.g.Eventually(l.status(p)).Should(BeComparableTo(policyv1.PolicyStatus{
		Details: []policyv1.DetailsPerTemplate{detail("b", ""), detail("a", policyv1.Compliant, a1)},
	}), "b has not reported: unknown")

	b2 := l.record(p, "b", policyv1.NonCompliant, "bad", 2)
	l.g.Eventually(l.status(p)).Should(BeComparableTo(policyv1.PolicyStatus{
		ComplianceState: policyv1.NonCompliant,
		Details:         []policyv1.DetailsPerTemplate{detail("b", policyv1.NonCompliant, b2), detail("a", policyv1.Compliant, a1)},
	}))

	b3 := l.record(p, "b", policyv1.Pending, "waiting", 3)
	l.g.Eventually(l.status(p)).Should(HaveField("ComplianceState", policyv1.Pending))
	a4 := l.record(p, "a", policyv1.NonCompliant, "drifted", 4)
	l.g.Eventually(l.status(p)).Should(BeComparableTo(policyv1.PolicyStatus{
		ComplianceState: policyv1.NonCompliant,
		Details:         []policyv1.DetailsPerTemplate{detail("b", policyv1.Pending, b3, b2), detail("a", policyv1.NonCompliant, a4, a1)},
	}), "NonCompliant wins over Pending")

	a5 := l.record(p, "a", policyv1.Compliant, "ok again", 5)
	b6 := l.record(p, "b", policyv1.Compliant, "done", 6)
	l.g.Eventually(l.status(p)).Should(BeComparableTo(policyv1.PolicyStatus{
		ComplianceState: policyv1.Compliant,
		Details:         []policyv1.DetailsPerTemplate{detail("b", policyv1.Compliant, b6, b3, b2), detail("a", policyv1.Compliant, a5, a4, a1)},
	}))
}

// TestLocalPolicyWithoutTemplates: a Policy without templates has nothing
// to violate: Compliant.
func TestLocalPolicyWithoutTemplates(t *testing.T) {
	l := newLocal(t)
	p := l.policy("empty")
	l.g.Eventually(l.status(p)).Should(BeComparableTo(policyv1.PolicyStatus{ComplianceState: policyv1.Compliant}))
}

// TestLocalHistoryOrderAndLimit: events recorded out of order end up newest
// first, the later event first within a second (event names carry the
// nanoseconds), and only the HistoryLimit newest are kept.
func TestLocalHistoryOrderAndLimit(t *testing.T) {
	l := newLocal(t)
	p := l.policy("p", "a")
	events := map[int]*corev1.Event{}
	for _, s := range []int{7, 2, 11, 0, 5, 9, 1, 10, 3, 8, 6, 4} {
		state := policyv1.NonCompliant
		if s%2 == 0 {
			state = policyv1.Compliant
		}
		events[s] = l.record(p, "a", state, "try", s)
	}
	// Two events in second 12: their timestamps are equal once stored.
	late := record(t, l.c, p, "a", policyv1.Compliant, "later", at(12).Add(200*time.Millisecond))
	early := record(t, l.c, p, "a", policyv1.NonCompliant, "earlier", at(12).Add(100*time.Millisecond))
	l.g.Expect(late.LastTimestamp).To(Equal(early.LastTimestamp))

	want := []*corev1.Event{late, early}
	for s := 11; len(want) < HistoryLimit; s-- {
		want = append(want, events[s])
	}
	l.g.Eventually(l.status(p)).Should(BeComparableTo(policyv1.PolicyStatus{
		ComplianceState: policyv1.Compliant,
		Details:         []policyv1.DetailsPerTemplate{detail("a", policyv1.Compliant, want...)},
	}))
}

// TestLocalHistoryOutlivesEvents: the status keeps the history of events
// that expired, once each, and adds the new ones to it.
func TestLocalHistoryOutlivesEvents(t *testing.T) {
	l := newLocal(t)
	p := l.policy("p", "a")
	e1 := l.record(p, "a", policyv1.NonCompliant, "bad", 1)
	l.g.Eventually(l.status(p)).Should(HaveField("Details", HaveExactElements(HaveField("History", HaveLen(1)))))
	e2 := l.record(p, "a", policyv1.Compliant, "ok", 2)
	l.g.Eventually(l.status(p)).Should(HaveField("Details", HaveExactElements(HaveField("History", HaveLen(2)))))

	l.g.Expect(l.c.Delete(t.Context(), e1)).To(Succeed()) // as the API server's event TTL does
	l.g.Expect(l.c.Delete(t.Context(), e2)).To(Succeed())
	e3 := l.record(p, "a", policyv1.NonCompliant, "bad again", 3)
	want := policyv1.PolicyStatus{
		ComplianceState: policyv1.NonCompliant,
		Details:         []policyv1.DetailsPerTemplate{detail("a", policyv1.NonCompliant, e3, e2, e1)},
	}
	l.g.Eventually(l.status(p)).Should(BeComparableTo(want))
	l.g.Consistently(l.status(p)).Should(BeComparableTo(want))
}

// TestLocalIgnoredEvents: the status counts only the Policy's well-formed
// compliance events about templates of its spec: not other events on the
// Policy, not malformed compliance events, not events of templates outside
// its spec, not another Policy's events.
func TestLocalIgnoredEvents(t *testing.T) {
	l := newLocal(t)
	p := l.policy("p", "a")
	other := l.policy("other", "a")
	l.g.Eventually(l.status(p)).Should(HaveField("Details", HaveLen(1)))

	ref := corev1.ObjectReference{APIVersion: policyv1.GroupVersion.String(), Kind: "Policy", Namespace: l.ns, Name: p.Name, UID: p.UID}
	for i, ev := range []*corev1.Event{
		{Reason: "Created", Message: "NonCompliant; not a compliance event"},
		{Reason: "policy: " + l.ns + "/a", Message: "Unknown; not a state"},
		{Reason: "policy: a", Message: "NonCompliant; no namespace in the reason"},
	} {
		ev.ObjectMeta = metav1.ObjectMeta{Namespace: l.ns, GenerateName: "p."}
		ev.InvolvedObject = ref
		ev.LastTimestamp = metav1.NewTime(at(10 + i))
		create(t, l.c, ev)
	}
	l.record(p, "gone", policyv1.NonCompliant, "not in the spec", 20)
	l.record(other, "a", policyv1.NonCompliant, "another policy's", 21)
	ok := l.record(p, "a", policyv1.Compliant, "ok", 1)

	want := policyv1.PolicyStatus{
		ComplianceState: policyv1.Compliant,
		Details:         []policyv1.DetailsPerTemplate{detail("a", policyv1.Compliant, ok)},
	}
	l.g.Eventually(l.status(p)).Should(BeComparableTo(want))
	l.g.Consistently(l.status(p)).Should(BeComparableTo(want))
}

// TestLocalRecreatedPolicy: a Policy recreated under the same name does not
// inherit its predecessor's events: they carry the old UID.
func TestLocalRecreatedPolicy(t *testing.T) {
	l := newLocal(t)
	p := l.policy("p", "a")
	l.record(p, "a", policyv1.NonCompliant, "bad", 1)
	l.g.Eventually(l.status(p)).Should(HaveField("ComplianceState", policyv1.NonCompliant))

	l.g.Expect(l.c.Delete(t.Context(), p)).To(Succeed())
	l.g.Eventually(l.status(p)).Should(BeZero())
	p = l.policy("p", "a")
	want := policyv1.PolicyStatus{Details: []policyv1.DetailsPerTemplate{detail("a", "")}}
	l.g.Eventually(l.status(p)).Should(BeComparableTo(want))
	l.g.Consistently(l.status(p)).Should(BeComparableTo(want))
}

// TestLocalTemplateRemoved: a template removed from the spec loses its
// detail, and no longer counts in the Policy's compliance.
func TestLocalTemplateRemoved(t *testing.T) {
	l := newLocal(t)
	p := l.policy("p", "a", "b")
	l.record(p, "a", policyv1.NonCompliant, "bad", 1)
	b2 := l.record(p, "b", policyv1.Compliant, "ok", 2)
	l.g.Eventually(l.status(p)).Should(HaveField("ComplianceState", policyv1.NonCompliant))

	l.g.Expect(l.c.Get(t.Context(), client.ObjectKeyFromObject(p), p)).To(Succeed())
	p.Spec.PolicyTemplates = p.Spec.PolicyTemplates[1:]
	l.g.Expect(l.c.Update(t.Context(), p)).To(Succeed())
	l.g.Eventually(l.status(p)).Should(BeComparableTo(policyv1.PolicyStatus{
		ComplianceState: policyv1.Compliant,
		Details:         []policyv1.DetailsPerTemplate{detail("b", policyv1.Compliant, b2)},
	}))
}

// TestLocalDeletingPolicy: the status of a Policy being deleted is left as
// it is.
func TestLocalDeletingPolicy(t *testing.T) {
	l := newLocal(t)
	p := newPolicy(l.ns, "p", "a")
	p.Finalizers = []string{"test.canopy.io/keep"}
	create(t, l.c, p)
	t.Cleanup(func() { // let the Policy go
		p := &policyv1.Policy{}
		if l.c.Get(context.Background(), client.ObjectKey{Namespace: l.ns, Name: "p"}, p) == nil {
			p.Finalizers = nil
			_ = l.c.Update(context.Background(), p)
		}
	})
	want := policyv1.PolicyStatus{Details: []policyv1.DetailsPerTemplate{detail("a", "")}}
	l.g.Eventually(l.status(p)).Should(BeComparableTo(want))

	l.g.Expect(l.c.Delete(t.Context(), p)).To(Succeed())
	l.record(p, "a", policyv1.NonCompliant, "bad", 1)
	l.g.Consistently(l.status(p)).Should(BeComparableTo(want))
}

// TestLocalNamespaceRestriction: a controller restricted to a namespace
// leaves the Policies of other namespaces alone.
func TestLocalNamespaceRestriction(t *testing.T) {
	l := newLocal(t)
	elsewhere := controlplane.Namespace(t, l.c)
	outside := newPolicy(elsewhere, "p", "a")
	create(t, l.c, outside)
	record(t, l.c, outside, "a", policyv1.NonCompliant, "bad", at(1))
	inside := l.policy("p", "a")
	l.record(inside, "a", policyv1.NonCompliant, "bad", 1)

	l.g.Eventually(l.status(inside)).Should(HaveField("ComplianceState", policyv1.NonCompliant))
	l.g.Consistently(status(t, l.c, outside)).Should(BeZero())
}

// TestLocalEveryNamespace: an unrestricted controller (Namespace "") writes
// the Policies of every namespace. It does not run in parallel: it would
// write the other tests' Policies.
func TestLocalEveryNamespace(t *testing.T) {
	g := NewWithT(t)
	c := suite.Get(t).Managed[0].Client
	startLocal(t, "", true)
	for _, ns := range []string{controlplane.Namespace(t, c), controlplane.Namespace(t, c)} {
		p := newPolicy(ns, "p", "a")
		create(t, c, p)
		record(t, c, p, "a", policyv1.Pending, "waiting", at(1))
		g.Eventually(status(t, c, p)).Should(HaveField("ComplianceState", policyv1.Pending))
	}
}
