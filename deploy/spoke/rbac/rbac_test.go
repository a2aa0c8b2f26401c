package rbac

import (
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
)

// TestClusterRolesSplit checks the agent's least-privilege split: its own
// ClusterRole reaches only its machinery (Canopy's API groups, events,
// leases, namespaces, CRDs read, the copy of the encryption key, and
// Gatekeeper's templates, and its validating webhook configuration read), never every group
// nor any other Secret, and the separate enforcement ClusterRole carries
// the broad default.
func TestClusterRolesSplit(t *testing.T) {
	g := NewWithT(t)
	role, err := ClusterRole()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(role.Name).To(Equal("canopy-agent"))
	machinery := []string{"", "events.k8s.io", "coordination.k8s.io", "apiextensions.k8s.io",
		"policy.open-cluster-management.io", "hierarchy.canopy.io", "admissionregistration.k8s.io",
		"templates.gatekeeper.sh", "constraints.gatekeeper.sh"} // Note: Gatekeeper's kinds are policy templates the agent writes
	for _, rule := range role.Rules {
		g.Expect(machinery).To(ContainElements(rule.APIGroups), "rule %v", rule)
		if slices.Contains(rule.APIGroups, "") && slices.Contains(rule.Resources, "secrets") {
			expectKeyOnly(g, rule)
		} else if slices.Contains(rule.APIGroups, "") {
			g.Expect([]string{"events", "namespaces"}).To(ContainElements(rule.Resources), "core rule %v", rule)
		}
		if slices.Contains(rule.APIGroups, "admissionregistration.k8s.io") { // whether a constraint's deny is enforced
			g.Expect(rule.Resources).To(Equal([]string{"validatingwebhookconfigurations"}), "%v", rule)
			g.Expect(rule.ResourceNames).To(Equal([]string{"gatekeeper-validating-webhook-configuration"}), "%v", rule)
			g.Expect(rule.Verbs).To(ConsistOf("get", "list", "watch"), "%v", rule)
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

// expectKeyOnly checks a rule on Secrets: secretsync (pkg/spoke/secretsync)
// reads, updates and deletes only the encryption key's copy, by name, and
// may create a Secret (a create cannot be limited by name), never read one.
func expectKeyOnly(g Gomega, rule rbacv1.PolicyRule) {
	g.Expect(rule.Resources).To(Equal([]string{"secrets"}), "Secrets get a rule of their own: %v", rule)
	if len(rule.ResourceNames) == 0 {
		g.Expect(rule.Verbs).To(Equal([]string{"create"}), "only the encryption key is read: %v", rule)
		return
	}
	g.Expect(rule.ResourceNames).To(Equal([]string{"policy-encryption-key"}), "only the encryption key is read: %v", rule)
}
