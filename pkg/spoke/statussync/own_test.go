package statussync

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// TestOwnWrites: the update that brings back the version a status write
// made is let through once, never; every other update is let through.
func TestOwnWrites(t *testing.T) {
	g := NewWithT(t)
	version := func(uid, rv string) *policyv1.Policy {
		return &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), ResourceVersion: rv}}
	}
	update := func(p *policyv1.Policy) ctrlevent.UpdateEvent {
		return ctrlevent.UpdateEvent{ObjectOld: version(string(p.UID), "1"), ObjectNew: p}
	}
	var w ownWrites
	pred := w.notOwnWrite()
	g.Expect(pred.Update(update(version("p", "5")))).To(BeTrue(), "nothing written yet")
	w.wrote(version("p", "5"))
	g.Expect(pred.Update(update(version("p", "4")))).To(BeTrue(), "an older version: someone else's")
	g.Expect(pred.Update(update(version("q", "5")))).To(BeTrue(), "another Policy")
	g.Expect(pred.Update(update(version("p", "5")))).To(BeFalse(), "the version the write made")
	g.Expect(pred.Update(update(version("p", "5")))).To(BeTrue(), "only once")
	w.wrote(version("p", "6"))
	g.Expect(pred.Delete(ctrlevent.DeleteEvent{Object: version("p", "6")})).To(BeTrue())
	g.Expect(w.versions).To(BeEmpty(), "forgotten with the Policy")
}

// TestLocalStatusOverwritten: a status someone else writes over
// statussync's is computed again and written back.
func TestLocalStatusOverwritten(t *testing.T) {
	l := newLocal(t)
	p := l.policy("p", "a")
	a1 := l.record(p, "a", policyv1.Compliant, "ok", 1)
	want := policyv1.PolicyStatus{
		ComplianceState: policyv1.Compliant,
		Details:         []policyv1.DetailsPerTemplate{detail("a", policyv1.Compliant, a1)},
	}
	l.g.Eventually(l.status(p)).Should(BeComparableTo(want))

	l.g.Eventually(func(g Gomega) {
		current := &policyv1.Policy{}
		g.Expect(l.c.Get(l.t.Context(), client.ObjectKeyFromObject(p), current)).To(Succeed())
		current.Status = policyv1.PolicyStatus{ComplianceState: policyv1.NonCompliant}
		g.Expect(l.c.Status().Update(l.t.Context(), current)).To(Succeed())
	}).Should(Succeed())
	l.g.Eventually(l.status(p)).Should(BeComparableTo(want))
}
