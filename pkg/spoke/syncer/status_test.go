package syncer

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

func TestEvaluatedStatus(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	p := policy(t, fooCorp)
	p.Generation = 4
	create := action{op: opCreate, object: obj(t, rbBinding), reason: "declared but missing", declared: true}
	conflict := action{op: opConflict, object: obj(t, handMade), reason: "declared, but it is managed by helm; left alone", declared: true}
	tests := []struct {
		name       string
		outcomes   []outcome
		wantState  policyv1.ComplianceState
		wantReason string
		wantCounts []hierarchyv1alpha1.NamespaceCounts
	}{
		{"in sync", []outcome{{namespace: "shipping-prod", declared: 3, applied: true}},
			policyv1.Compliant, ReasonInSync, []hierarchyv1alpha1.NamespaceCounts{{Name: "shipping-prod", Declared: 3, InSync: 3}}},
		{"inform plans", []outcome{{namespace: "shipping-prod", declared: 3, actions: []action{create}}},
			policyv1.NonCompliant, ReasonPlanned, []hierarchyv1alpha1.NamespaceCounts{{Name: "shipping-prod", Declared: 3, InSync: 2, Planned: 1}}},
		{"enforce remediated", []outcome{{namespace: "shipping-prod", declared: 3, actions: []action{create}, applied: true}},
			policyv1.Compliant, ReasonRemediated, []hierarchyv1alpha1.NamespaceCounts{{Name: "shipping-prod", Declared: 3, InSync: 3}}},
		{"write failed", []outcome{{namespace: "shipping-prod", declared: 3, actions: []action{create}, applied: true,
			failed: failures{writes: map[int]error{0: errors.New("forbidden")}}}},
			policyv1.NonCompliant, ReasonFailed, []hierarchyv1alpha1.NamespaceCounts{{Name: "shipping-prod", Declared: 3, InSync: 2, Planned: 1}}},
		{"conflict; tree and generator outcomes of one namespace add up", []outcome{
			{namespace: "shipping-prod", declared: 3, actions: []action{conflict}, applied: true},
			{namespace: "shipping-prod", declared: 1, applied: true}},
			policyv1.NonCompliant, ReasonConflicts, []hierarchyv1alpha1.NamespaceCounts{{Name: "shipping-prod", Declared: 4, InSync: 3, Conflicts: 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			st := evaluatedStatus(p, newTree(p), tt.outcomes, now)
			g.Expect(st.ComplianceState).To(Equal(tt.wantState))
			g.Expect(meta.FindStatusCondition(st.Conditions, ConditionInSync).Reason).To(Equal(tt.wantReason))
			g.Expect(meta.IsStatusConditionTrue(st.Conditions, ConditionTreeValid)).To(BeTrue())
			g.Expect(st.Namespaces).To(Equal(tt.wantCounts))
			g.Expect(st.LastEvaluatedGeneration).To(Equal(int64(4)))
			g.Expect(st.LastEvaluated.Time).To(Equal(now))
		})
	}
}

func TestEventMessage(t *testing.T) {
	g := NewWithT(t)
	p := policy(t, `{metadata: {name: p}, spec: {nodes: [{name: a, parent: b}]}}`)
	tr := newTree(p)
	held := action{op: opHold, object: obj(t, handMade), reason: "not declared, and its kind is managed; deletion held while the tree is invalid"}
	st := evaluatedStatus(p, tr, []outcome{{namespace: "shipping-prod", actions: []action{held}, applied: true}}, time.Now())
	g.Expect(meta.FindStatusCondition(st.Conditions, ConditionTreeValid).Status).To(Equal(metav1.ConditionFalse))
	g.Expect(eventMessage(st)).To(Equal("violation - The tree is invalid; see the TreeValid condition; " +
		"Every deletion is held until the tree is fixed: node a: parent b is not a node; " +
		"Role shipping-prod/secret-admin: hold: not declared, and its kind is managed; deletion held while the tree is invalid"))
}
