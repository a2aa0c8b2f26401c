package configpolicy

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

func TestTemplateMessage(t *testing.T) {
	res := func(ns, reason string, compliant bool, names ...string) objectResult {
		return objectResult{namespace: ns, names: names, reason: reason, compliant: compliant}
	}
	tests := []struct {
		name          string
		resource      string
		results       []objectResult
		wantCompliant bool
		wantReason    string
		wantMessage   string
	}{
		{name: "found", resource: "configmaps", results: []objectResult{res("default", ReasonFoundAsExpected, true, "app")},
			wantCompliant: true, wantReason: "K8s `must have` object already exists",
			wantMessage: "configmaps [app] found as specified in namespace default"},
		{name: "cluster-scoped", resource: "namespaces", results: []objectResult{res("", ReasonFoundAsExpected, true, "movies")},
			wantCompliant: true, wantReason: "K8s `must have` object already exists", wantMessage: "namespaces [movies] found as specified"},
		{name: "several namespaces", resource: "configmaps",
			results:       []objectResult{res("b", ReasonFoundAsExpected, true, "app"), res("a", ReasonFoundAsExpected, true, "app")},
			wantCompliant: true, wantReason: "K8s `must have` object already exists",
			wantMessage: "configmaps [app] found as specified in namespaces: a, b"},
		{name: "created in one, found in another", resource: "configmaps",
			results:       []objectResult{res("a", ReasonCreated, true, "app"), res("b", ReasonFoundAsExpected, true, "app")},
			wantCompliant: true, wantReason: "K8s `must have` object already exists; K8s creation success",
			wantMessage: "configmaps [app] found as specified in namespace b; configmaps [app] was created successfully in namespace a"},
		{name: "only the noncompliant are told", resource: "configmaps",
			results:       []objectResult{res("a", ReasonFoundAsExpected, true, "app"), res("b", ReasonNotFound, false, "app")},
			wantCompliant: false, wantReason: "K8s does not have a `must have` object",
			wantMessage: "configmaps [app] not found in namespace b"},
		{name: "mismatch", resource: "configmaps", results: []objectResult{res("default", ReasonFoundNoMatch, false, "app-config")},
			wantReason:  "K8s does not have a `must have` object",
			wantMessage: "configmaps [app-config] found but not as specified in namespace default"},
		{name: "mustnothave found", resource: "configmaps", results: []objectResult{res("ns", ReasonFoundUnwanted, false, "x")},
			wantReason: "K8s has a `must not have` object", wantMessage: "configmaps [x] found in namespace ns"},
		{name: "mustnothave missing", resource: "configmaps", results: []objectResult{res("ns", ReasonNotFoundAsExpected, true, "x")},
			wantCompliant: true, wantReason: "K8s `must not have` object already missing",
			wantMessage: "configmaps [x] missing as expected in namespace ns"},
		{name: "deleted", resource: "configmaps", results: []objectResult{res("ns", ReasonDeleted, true, "x")},
			wantCompliant: true, wantReason: "K8s deletion success", wantMessage: "configmaps [x] was deleted successfully in namespace ns"},
		{name: "unnamed, several objects", resource: "configmaps",
			results:    []objectResult{res("t1", ReasonFoundNoMatch, false, "rex", "woody"), res("t2", ReasonFoundNoMatch, false, "buzz")},
			wantReason: "K8s does not have a `must have` object",
			wantMessage: "configmaps [buzz] found but not as specified in namespace t2; " +
				"configmaps [rex, woody] found but not as specified in namespace t1"},
		{name: "unnamed, none found", resource: "configmaps", results: []objectResult{res("t1", ReasonNotFound, false)},
			wantReason: "K8s does not have a `must have` object", wantMessage: "configmaps not found in namespace t1"},
		{name: "errors", resource: "configmaps", results: []objectResult{
			{namespace: "b", reason: "K8s creation error", message: "configmaps [x] in namespace b is missing, and cannot be created, reason: `no`"},
			{namespace: "a", reason: "K8s missing namespace", message: "namespaced object x of kind ConfigMap has no namespace"},
			res("c", ReasonNotFound, false, "x"),
		}, wantReason: "K8s does not have a `must have` object; K8s creation error; K8s missing namespace",
			wantMessage: "configmaps [x] not found in namespace c; " +
				"configmaps [x] in namespace b is missing, and cannot be created, reason: `no`; " +
				"namespaced object x of kind ConfigMap has no namespace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			compliant, reason, msg := templateMessage(tt.resource, tt.results)
			g.Expect(compliant).To(Equal(tt.wantCompliant))
			g.Expect(reason).To(Equal(tt.wantReason))
			g.Expect(msg).To(Equal(tt.wantMessage))
		})
	}
}

func TestEvaluatedStatus(t *testing.T) {
	g := NewWithT(t)
	then := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	now := then.Add(time.Hour)
	policy := &policyv1.ConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: 3}}
	policy.Status.CompliancyDetails = []policyv1.TemplateStatus{{Conditions: []policyv1.TemplateCondition{{
		Type: ConditionNotification, Reason: "K8s `must have` object already exists",
		Message: "configmaps [a] found as specified in namespace n", LastTransitionTime: metav1.NewTime(then),
	}}}}
	found := relatedObject("v1", "ConfigMap", "n", "a", true, ReasonFoundAsExpected, nil)
	missing := relatedObject("v1", "ConfigMap", "n", "b", false, ReasonNotFound, nil)
	st := evaluatedStatus(policy, []templateOutcome{
		{resource: "configmaps", results: []objectResult{{namespace: "n", names: []string{"a"}, reason: ReasonFoundAsExpected, compliant: true}},
			related: []policyv1.RelatedObject{found}},
		{resource: "configmaps", results: []objectResult{{namespace: "n", names: []string{"b"}, reason: ReasonNotFound}},
			related: []policyv1.RelatedObject{missing, found}},
	}, now)
	g.Expect(st.ComplianceState).To(Equal(policyv1.NonCompliant))
	g.Expect(st.LastEvaluated).To(Equal("2025-01-01T01:00:00Z"))
	g.Expect(st.LastEvaluatedGeneration).To(Equal(int64(3)))
	g.Expect(st.CompliancyDetails).To(HaveLen(2))
	g.Expect(st.CompliancyDetails[0].Conditions[0].LastTransitionTime.Time).To(Equal(then), "unchanged condition keeps its time")
	g.Expect(st.CompliancyDetails[1].Conditions[0].LastTransitionTime.Time).To(Equal(now))
	g.Expect(st.RelatedObjects).To(Equal([]policyv1.RelatedObject{found, missing}))
	g.Expect(eventMessage(st)).To(Equal("notification - configmaps [a] found as specified in namespace n; " +
		"violation - configmaps [b] not found in namespace n"))

	empty := evaluatedStatus(policy, nil, now)
	g.Expect(empty.ComplianceState).To(Equal(policyv1.Compliant))
	g.Expect(eventMessage(empty)).To(Equal("notification - p contains no object templates to check, and thus has no violations"))
}
