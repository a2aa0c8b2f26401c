package hubrbac_test

import (
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	"open-cluster-management.io/addon-framework/pkg/agent"

	"github.com/canopy-policy/canopy/pkg/hubrbac"
	"github.com/canopy-policy/canopy/pkg/templating"
)

// allows reports whether rules grant verb on group/resource, for the object
// name (empty: any object, as a list without a name selector asks), the way
// the RBAC authorizer matches a rule (no wildcards: Rules must not use them).
func allows(rules []rbacv1.PolicyRule, group, resource, verb, name string) bool {
	for _, r := range rules {
		if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) &&
			(len(r.ResourceNames) == 0 || slices.Contains(r.ResourceNames, name)) {
			return true
		}
	}
	return false
}

func TestRules(t *testing.T) {
	const policies = "policy.open-cluster-management.io"
	tests := []struct {
		group, resource, verb string
		name                  string // the object's name; empty: any
		want                  bool
	}{
		{policies, "policies", "get", "", true},
		{policies, "policies", "list", "", true},
		{policies, "policies", "watch", "", true},
		{policies, "policies", "update", "", true},
		{policies, "policies", "patch", "", true},
		{policies, "policies", "create", "", false}, // the propagator owns replicas
		{policies, "policies", "delete", "", false},
		{policies, "policies/status", "update", "", true},
		{policies, "policies/status", "patch", "", true},
		{policies, "placementbindings", "get", "", false},
		{policies, "policysets", "get", "", false},
		{"", "events", "create", "", true},
		{"", "events", "patch", "", true},
		{"", "events", "delete", "", false},
		{"events.k8s.io", "events", "create", "", true},
		{"coordination.k8s.io", "leases", "create", "", true},
		{"coordination.k8s.io", "leases", "update", "", true},
		{"coordination.k8s.io", "leases", "delete", "", false},
		{"", "secrets", "get", "", false},
		{"", "secrets", "list", "", false},
		{"", "secrets", "get", "other", false},
		{"", "secrets", "get", templating.EncryptionKeySecret, true},
		{"", "secrets", "list", templating.EncryptionKeySecret, true},
		{"", "secrets", "watch", templating.EncryptionKeySecret, true},
		{"", "secrets", "update", templating.EncryptionKeySecret, false},
		{"", "secrets", "patch", templating.EncryptionKeySecret, false},
		{"", "secrets", "delete", templating.EncryptionKeySecret, false},
		{"", "secrets", "create", templating.EncryptionKeySecret, false},
		{"", "configmaps", "get", "", false},
		{"cluster.open-cluster-management.io", "managedclusters", "get", "", false},
		{"work.open-cluster-management.io", "manifestworks", "create", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.group+"/"+tt.resource+"/"+tt.name+":"+tt.verb, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(allows(hubrbac.Rules(), tt.group, tt.resource, tt.verb, tt.name)).To(Equal(tt.want))
		})
	}
}

func TestRulesHaveNoWildcards(t *testing.T) {
	g := NewWithT(t)
	for _, r := range hubrbac.Rules() {
		g.Expect(r.APIGroups).NotTo(ContainElement("*"))
		g.Expect(r.Resources).NotTo(ContainElement("*"))
		g.Expect(r.Verbs).NotTo(ContainElement("*"))
		g.Expect(r.NonResourceURLs).To(BeEmpty())
		if len(r.ResourceNames) > 0 { // only the encryption key is named, and only read
			g.Expect(r.Resources).To(Equal([]string{"secrets"}))
			g.Expect(r.ResourceNames).To(Equal([]string{templating.EncryptionKeySecret}))
			g.Expect(r.Verbs).To(ConsistOf("get", "list", "watch"))
		}
	}
}

// TestSecretsOnlyByName checks that every rule on Secrets names the
// encryption key: without resourceNames a rule would open every Secret of
// the cluster namespace.
func TestSecretsOnlyByName(t *testing.T) {
	g := NewWithT(t)
	var secretRules int
	for _, r := range hubrbac.Rules() {
		if slices.Contains(r.Resources, "secrets") {
			secretRules++
			g.Expect(r.ResourceNames).To(Equal([]string{templating.EncryptionKeySecret}))
		}
	}
	g.Expect(secretRules).To(Equal(1))
}

func TestRoleAndBinding(t *testing.T) {
	g := NewWithT(t)
	role := hubrbac.Role("cluster1")
	g.Expect(role.Namespace).To(Equal("cluster1"))
	g.Expect(role.Name).To(Equal("canopy-agent"))
	g.Expect(role.Labels).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "canopy"))
	g.Expect(role.Rules).To(Equal(hubrbac.Rules()))

	rb := hubrbac.RoleBinding("cluster1", hubrbac.GroupSubject("cluster1"))
	g.Expect(rb.Namespace).To(Equal("cluster1"))
	g.Expect(rb.Name).To(Equal(role.Name))
	g.Expect(rb.RoleRef).To(Equal(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name}))
	g.Expect(rb.Subjects).To(ConsistOf(rbacv1.Subject{
		Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName,
		Name: "system:open-cluster-management:cluster:cluster1:addon:canopy-policy",
	}))

	// Callers may mutate what they get without affecting the next caller.
	role.Labels["x"] = "y"
	role.Rules[0].Verbs[0] = "delete"
	g.Expect(hubrbac.Role("cluster1").Labels).NotTo(HaveKey("x"))
	g.Expect(hubrbac.Rules()[0].Verbs[0]).To(Equal("get"))
}

// TestIdentityMatchesOCM guards against drift from the names OCM's addon
// registration gives the agent.
func TestIdentityMatchesOCM(t *testing.T) {
	g := NewWithT(t)
	g.Expect(hubrbac.User("c1")).To(Equal(agent.DefaultUser("c1", hubrbac.AddonName, hubrbac.AgentName)))
	g.Expect(hubrbac.Groups("c1")).To(Equal(agent.DefaultGroups("c1", hubrbac.AddonName)))
	g.Expect(hubrbac.Group("c1")).To(Equal(agent.DefaultGroups("c1", hubrbac.AddonName)[0]))
}
