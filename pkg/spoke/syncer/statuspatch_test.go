package syncer

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// TestOnlyTimeChanged: a reconcile whose status only bumps lastEvaluated
// skips the status patch, failed or not; a real change does not.
func TestOnlyTimeChanged(t *testing.T) {
	g := NewWithT(t)
	boom := errors.New("boom")
	orig := &hierarchyv1alpha1.HierarchyPolicy{}
	orig.Status.ComplianceState = policyv1.Compliant
	orig.Status.LastEvaluated = &metav1.Time{Time: time.Unix(1, 0)}
	bumped := orig.DeepCopy()
	bumped.Status.LastEvaluated = &metav1.Time{Time: time.Unix(2, 0)}
	changed := bumped.DeepCopy()
	changed.Status.ComplianceState = policyv1.NonCompliant

	g.Expect(onlyTimeChanged(orig, bumped, boom)).To(BeTrue())
	g.Expect(onlyTimeChanged(orig, bumped, nil)).To(BeTrue(), "a success that changes nothing writes nothing")
	g.Expect(onlyTimeChanged(orig, changed, boom)).To(BeFalse(), "a real change is written")
	g.Expect(onlyTimeChanged(orig, changed, nil)).To(BeFalse(), "a real change is written")

	// What the API server would not store differently is no change: a
	// condition's time below the second, nil or empty lists.
	withCondition := orig.DeepCopy()
	withCondition.Status.Conditions = []metav1.Condition{{Type: ConditionInSync, Status: metav1.ConditionTrue,
		LastTransitionTime: metav1.Time{Time: time.Unix(10, 0)}}}
	sameSecond := withCondition.DeepCopy()
	sameSecond.Status.Conditions[0].LastTransitionTime = metav1.Time{Time: time.Unix(10, 500)}
	sameSecond.Status.LastEvaluated = &metav1.Time{Time: time.Unix(2, 0)}
	sameSecond.Status.RelatedObjects = []policyv1.RelatedObject{}
	g.Expect(onlyTimeChanged(withCondition, sameSecond, nil)).To(BeTrue(), "as stored, only lastEvaluated differs")
	nextSecond := sameSecond.DeepCopy()
	nextSecond.Status.Conditions[0].LastTransitionTime = metav1.Time{Time: time.Unix(11, 0)}
	g.Expect(onlyTimeChanged(withCondition, nextSecond, nil)).To(BeFalse(), "a new transition time is written")
}
