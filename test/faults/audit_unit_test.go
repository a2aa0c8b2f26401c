package faults

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/canopy-policy/canopy/internal/test/controlplane"
)

// The checks of TestAgentKilled fail when they should: these feed them
// made-up audits and histories.

func TestClassifyDeletions(t *testing.T) {
	declared := map[string]map[string]map[string]string{"ft-0": {"org-wide": {}, "cm-ft-0": {}}}
	tests := []struct {
		name      string
		del       deletion
		violation bool
	}{
		{"undeclared ConfigMap in a tree namespace", deletion{"configmaps", "ft-0", "intruder-1"}, false},
		{"declared ConfigMap", deletion{"configmaps", "ft-0", "cm-ft-0"}, true},
		{"ConfigMap outside the tree", deletion{"configmaps", bystanderNS, "bystander"}, true},
		{"unmanaged kind in a tree namespace", deletion{"secrets", "ft-0", "bystander"}, true},
		{"namespace of the tree", deletion{"namespaces", "", "ft-0"}, true},
		{"cluster-scoped bystander", deletion{"clusterroles", "", "faults-bystander"}, true},
		{"chain template", deletion{"configurationpolicies", killCluster, "step-2"}, false},
		{"other template", deletion{"configurationpolicies", killCluster, "gate-check"}, true},
		{"a whole collection", deletion{"configmaps", "ft-0", "*"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			violations, _, _ := classifyDeletions([]deletion{tt.del}, declared)
			if tt.violation {
				NewWithT(t).Expect(violations).To(HaveLen(1))
			} else {
				NewWithT(t).Expect(violations).To(BeEmpty())
			}
		})
	}
}

// TestMayHaveDeleted: a delete answered with a server error (its client
// killed mid-request) may have been committed, and is checked; one refused
// is not a deletion.
func TestMayHaveDeleted(t *testing.T) {
	g := NewWithT(t)
	withCode := func(code int32) *controlplane.AuditEvent {
		return &controlplane.AuditEvent{ResponseStatus: &metav1.Status{Code: code}}
	}
	g.Expect(mayHaveDeleted(withCode(200))).To(BeTrue())
	g.Expect(mayHaveDeleted(withCode(500))).To(BeTrue(), "context canceled: the storage may have committed it")
	g.Expect(mayHaveDeleted(withCode(504))).To(BeTrue())
	g.Expect(mayHaveDeleted(&controlplane.AuditEvent{})).To(BeTrue(), "no status")
	g.Expect(mayHaveDeleted(withCode(404))).To(BeFalse())
	g.Expect(mayHaveDeleted(withCode(409))).To(BeFalse(), "a precondition that failed")
	g.Expect(mayHaveDeleted(withCode(429))).To(BeFalse())
}

func TestDependencyHistory(t *testing.T) {
	g := NewWithT(t)
	changes := []change{
		{kind: "Policy", name: "gate", event: watch.Added, rv: 10},
		{kind: "Policy", name: "gate", event: watch.Modified, rv: 12, state: "Compliant"},
		{kind: "ConfigurationPolicy", name: "step-1", event: watch.Added, rv: 13},
		{kind: "Policy", name: "gate", event: watch.Modified, rv: 20, state: "NonCompliant"},
		{kind: "ConfigurationPolicy", name: "step-1", event: watch.Deleted, rv: 21},
		{kind: "ConfigurationPolicy", name: "step-1", event: watch.Added, rv: 22},
		{kind: "Policy", name: "gate", event: watch.Modified, rv: 30, state: "Compliant"},
		{kind: "ConfigurationPolicy", name: "step-1", event: watch.Added, rv: 31},
		{kind: "ConfigurationPolicy", name: "step-1", event: watch.Deleted, rv: 32},
	}
	g.Expect(met(changes, "Policy", "gate", 12)).To(BeFalse(), "not yet Compliant at its own revision")
	g.Expect(met(changes, "Policy", "gate", 13)).To(BeTrue())
	g.Expect(met(changes, "Policy", "gate", 22)).To(BeFalse(), "step-1 appeared at 22 while the gate was NonCompliant")
	g.Expect(met(changes, "Policy", "missing", 40)).To(BeFalse())
	gate := change{kind: "Policy", name: "gate"}
	g.Expect(raced(changes, changes[5], gate)).To(BeFalse(), "the agent had already removed step-1 for the closed gate: a re-creation at 22 is early, not a race")
	racing := []change{changes[0], changes[1], changes[3],
		{kind: "ConfigurationPolicy", name: "step-1", event: watch.Added, rv: 21}}
	g.Expect(raced(racing, racing[3], gate)).To(BeTrue(), "created in flight as the gate closed at 20")
	g.Expect(resolvedAfter(racing, racing[3], gate)).To(BeFalse(), "never removed, gate never reopened")
	racing = append(racing, change{kind: "ConfigurationPolicy", name: "step-1", event: watch.Deleted, rv: 25})
	g.Expect(resolvedAfter(racing, racing[3], gate)).To(BeTrue(), "removed once the agent saw the change")
	g.Expect(templateDeletionJustified(changes, changes[4])).To(BeTrue(), "deleted after the gate closed")
	g.Expect(templateDeletionJustified(changes, changes[8])).To(BeFalse(), "deleted with the gate open since its creation")
}
