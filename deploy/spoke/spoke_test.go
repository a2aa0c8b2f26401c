package spoke

import (
	"slices"
	"testing"

	. "github.com/onsi/gomega"
)

// TestClusterRolesSplit checks the agent's least-privilege split: its own
// ClusterRole reaches only its machinery (Canopy's API groups, events,
// leases, namespaces, CRDs read), never every group nor a Secret, and the
// separate enforcement ClusterRole carries the broad default.
func TestClusterRolesSplit(t *testing.T) {
	g := NewWithT(t)
	role, err := ClusterRole()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(role.Name).To(Equal("canopy-agent"))
	machinery := []string{"", "events.k8s.io", "coordination.k8s.io", "apiextensions.k8s.io",
		"policy.open-cluster-management.io", "hierarchy.canopy.io"}
	for _, rule := range role.Rules {
		g.Expect(machinery).To(ContainElements(rule.APIGroups), "rule %v", rule)
		if slices.Contains(rule.APIGroups, "") {
			g.Expect([]string{"events", "namespaces"}).To(ContainElements(rule.Resources), "core rule %v", rule)
		}
		if slices.Contains(rule.APIGroups, "apiextensions.k8s.io") {
			g.Expect(rule.Verbs).To(ConsistOf("get", "list", "watch"), "CRDs are read only: %v", rule)
		}
	}
	enforcement, err := EnforcementClusterRole()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(enforcement.Name).To(Equal("canopy-agent-enforcement"))
	g.Expect(enforcement.Rules).To(HaveLen(1))
	g.Expect(enforcement.Rules[0].APIGroups).To(ConsistOf("*"))
}
