package security_test

import (
	"testing"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/canopy-policy/canopy/deploy/spoke/rbac"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/internal/test/testenv"
	"github.com/canopy-policy/canopy/test/inproc"
)

// restrictedUser is the agent's identity on the managed cluster in
// TestRestrictedAgent.
const restrictedUser = "canopy-agent-restricted"

// TestRestrictedAgent runs the agent with only its generated minimal
// ClusterRole (deploy/spoke/rbac/role.yaml) and an enforcement ClusterRole
// narrowed to ConfigMaps: its own machinery works (policies arrive,
// templates are created and evaluated, compliance reaches the hub), a
// ConfigMap is enforced, and enforcing a Secret is NonCompliant with the
// API server's Forbidden message.
func TestRestrictedAgent(t *testing.T) {
	suite.Get(t) // starts env on first use
	logErrorsOnFailure(t)
	g := NewWithT(t)
	mc := env.Cluster("cluster2")
	cfg := restrictedIdentity(t, mc)
	inproc.StartHub(t, env.Hub.Config)
	inproc.StartAgent(t, mc.Name, cfg, mc.HubConfig)

	ns := controlplane.Namespace(t, env.Hub.Client)
	placedPolicy(t, ns, mc.Name, "configmap", "enforce", `
apiVersion: policy.open-cluster-management.io/v1
kind: ConfigurationPolicy
metadata: {name: restricted-configmap}
spec:
  remediationAction: enforce
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: restricted, namespace: default}, data: {a: b}}`)
	placedPolicy(t, ns, mc.Name, "secret", "enforce", `
apiVersion: policy.open-cluster-management.io/v1
kind: ConfigurationPolicy
metadata: {name: restricted-secret}
spec:
  remediationAction: enforce
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: Secret, metadata: {name: restricted, namespace: default}}`)

	g.Eventually(replicaHistory(t.Context(), ns, "configmap", mc.Name), eventually, poll).Should(Equal([]string{
		"Compliant", "Compliant; notification - configmaps [restricted] found as specified in namespace default"}),
		"created, then settled") // the newest entry of the history
	g.Eventually(replicaHistory(t.Context(), ns, "secret", mc.Name), eventually, poll).Should(ContainElement(MatchRegexp(
		`^NonCompliant; .*secrets.* is forbidden: User "` + restrictedUser + `" cannot (get|list|create) resource "secrets"`)))
	t.Logf("secret: %q", replicaHistory(t.Context(), ns, "secret", mc.Name)())
}

// restrictedIdentity returns the managed cluster identity of the agent:
// the generated canopy-agent ClusterRole, and an enforcement role that
// allows ConfigMaps only.
func restrictedIdentity(t *testing.T, mc *testenv.ManagedCluster) *rest.Config {
	t.Helper()
	g := NewWithT(t)
	minimal, err := rbac.ClusterRole()
	g.Expect(err).NotTo(HaveOccurred())
	minimal.Name = restrictedUser
	narrowed := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: restrictedUser + "-enforcement"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"*"}}},
	}
	for _, role := range []*rbacv1.ClusterRole{minimal, narrowed} {
		g.Expect(mc.Client.Create(t.Context(), role)).To(Succeed())
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: role.Name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: restrictedUser}},
		}
		g.Expect(mc.Client.Create(t.Context(), binding)).To(Succeed())
	}
	cfg, err := mc.AddUser(restrictedUser)
	g.Expect(err).NotTo(HaveOccurred())
	return cfg
}
