package templatesync

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// TestTemplateComplianceChanged: of the status updates of a Policy, only a
// change of a template's compliance reconciles it.
func TestTemplateComplianceChanged(t *testing.T) {
	withStatus := func(history string, states ...policyv1.ComplianceState) *policyv1.Policy {
		p := &policyv1.Policy{}
		for i, s := range states {
			p.Status.Details = append(p.Status.Details, policyv1.DetailsPerTemplate{
				TemplateMeta: metav1.ObjectMeta{Name: string(rune('a' + i))}, ComplianceState: s,
				History: []policyv1.ComplianceHistory{{Message: history}},
			})
		}
		return p
	}
	for _, tc := range []struct {
		name     string
		old, new *policyv1.Policy
		want     bool
	}{
		{"a new history entry, same compliance", withStatus("one", policyv1.Pending), withStatus("two", policyv1.Pending), false},
		{"a template's compliance changed", withStatus("one", policyv1.Pending), withStatus("one", policyv1.Compliant), true},
		{"a template reported first", withStatus("one", ""), withStatus("one", policyv1.Pending), true},
		{"a template added", withStatus("one", policyv1.Pending), withStatus("one", policyv1.Pending, ""), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(templateComplianceChanged.Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new})).To(Equal(tc.want))
		})
	}
	g := NewWithT(t)
	g.Expect(templateComplianceChanged.Create(event.CreateEvent{Object: &policyv1.Policy{}})).To(BeFalse(), "creations pass the other predicates")
}
