package propagator

import (
	"errors"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPropagatedCondition(t *testing.T) {
	two := Resolution{Bound: true, Clusters: []Cluster{{Name: "c1"}, {Name: "c2"}}}
	for _, tc := range []struct {
		name        string
		disabled    bool
		res         Resolution
		failures    []error
		templates   []HubTemplateFailure
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage []string
	}{
		{"propagated", false, two, nil, nil, metav1.ConditionTrue, ReasonPropagated,
			[]string{"Replicated to 2 managed clusters."}},
		{"propagated with a problem", false,
			Resolution{Bound: true, Clusters: []Cluster{{Name: "c1"}}, Problems: []string{"Placement p of PlacementBinding b has no decisions"}},
			nil, nil, metav1.ConditionTrue, ReasonPropagated,
			[]string{"Replicated to 1 managed cluster. Placement p of PlacementBinding b has no decisions."}},
		{"disabled", true, Resolution{Bound: true}, nil, nil, metav1.ConditionFalse, ReasonDisabled,
			[]string{"spec.disabled is true"}},
		{"unbound", false, Resolution{}, nil, nil, metav1.ConditionFalse, ReasonNoClustersSelected,
			[]string{"No PlacementBinding in namespace ns names this policy"}},
		{"bound to empty placements", false, Resolution{Bound: true, Problems: []string{"P"}}, nil, nil,
			metav1.ConditionFalse, ReasonNoClustersSelected, []string{"select no managed cluster. P."}},
		{"failures, sorted", false, two, []error{errors.New("cluster c2: boom"), errors.New("cluster c1: bang")}, nil,
			metav1.ConditionFalse, ReasonPropagationFailed,
			[]string{"failed for 2 of 2 selected managed clusters (retrying): cluster c1: bang; cluster c2: boom"}},
		{"write failures come before template failures", false, two, []error{errors.New("cluster c1: bang")},
			[]HubTemplateFailure{{Cluster: "c2", Message: "m"}}, metav1.ConditionFalse, ReasonPropagationFailed,
			[]string{"cluster c1: bang"}},
		{"template failures, alike ones together", false, Resolution{Bound: true, Clusters: []Cluster{{Name: "c1"}, {Name: "c2"}, {Name: "c3"}}}, nil,
			[]HubTemplateFailure{{Cluster: "c2", Message: "bad"}, {Cluster: "c1", Message: "bad"}, {Cluster: "c2", Message: "also"}},
			metav1.ConditionFalse, ReasonHubTemplateError,
			[]string{"Hub templates failed to resolve for 2 of 3 selected managed clusters.",
				"annotation policy.open-cluster-management.io/hub-templates-error",
				": cluster c2: also; clusters c1, c2: bad"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			root := rootPolicy()
			root.Spec.Disabled = tc.disabled
			c := PropagatedCondition(root, tc.res, tc.failures, tc.templates)
			g.Expect(c.Type).To(Equal(ConditionPropagated))
			g.Expect(c.Status).To(Equal(tc.wantStatus))
			g.Expect(c.Reason).To(Equal(tc.wantReason))
			g.Expect(c.ObservedGeneration).To(Equal(root.Generation))
			for _, m := range tc.wantMessage {
				g.Expect(c.Message).To(ContainSubstring(m))
			}
			g.Expect(IsFailure(c)).To(Equal(tc.wantReason == ReasonPropagationFailed))
		})
	}
}

func TestConditionMessagesAreBounded(t *testing.T) {
	g := NewWithT(t)
	c := PropagatedCondition(rootPolicy(), Resolution{Bound: true, Problems: []string{strings.Repeat("x", 10000)}}, nil, nil)
	g.Expect(len(c.Message)).To(BeNumerically("<=", maxMessageLength))
	g.Expect(truncateTo("ab€cd", 6)).To(Equal("ab..."), "never a partial UTF-8 sequence")
}

func TestNameTooLongCondition(t *testing.T) {
	g := NewWithT(t)
	root := rootPolicy()
	root.Name = strings.Repeat("n", 61)
	c := NameTooLongCondition(root)
	g.Expect(c.Reason).To(Equal(ReasonNameTooLong))
	g.Expect(c.Message).To(ContainSubstring("63 characters long together; at most 62 are allowed"))
	g.Expect(IsFailure(c)).To(BeTrue())
}
