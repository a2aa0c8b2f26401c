package hubrbac

import (
	"fmt"
	"maps"
	"slices"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/canopy-policy/canopy/pkg/templating"
)

const (
	// AddonName is the name of Canopy's OCM addon (ClusterManagementAddOn and
	// ManagedClusterAddOn); OCM derives the agent's groups from it.
	AddonName = "canopy-policy"
	// AgentName is the agent's name within the addon; OCM derives the agent's
	// user name from it.
	AgentName = "canopy-agent"
	// Name is the name of the Role and RoleBinding in each cluster namespace.
	// It is fixed so that re-running the setup updates rather than duplicates.
	Name = "canopy-agent"

	// policyGroup is the API group of Policy (and its replicas).
	policyGroup = "policy.open-cluster-management.io"
)

// Labels are set on every object this package builds.
var Labels = map[string]string{
	"app.kubernetes.io/managed-by": "canopy",
	"app.kubernetes.io/component":  "agent-rbac",
}

var (
	readWrite   = []string{"get", "list", "watch", "update", "patch"}
	statusWrite = []string{"get", "update", "patch"}
	eventWrite  = []string{"create", "patch", "update", "get", "list", "watch"}
	leaseWrite  = []string{"get", "list", "watch", "create", "update", "patch"}
	readOnly    = []string{"get", "list", "watch"}
)

// Rules returns the hub permissions the agent of one managed cluster needs in
// that cluster's namespace, and nothing more:
//
//   - policies: read the replicas and update them (specsync never creates or
//     deletes a replica on the hub: the propagator owns them);
//   - policies/status: statussync writes replica status;
//   - events (core and events.k8s.io): compliance history is recorded as events;
//   - leases: the agent's health lease;
//   - secrets, only the one named templating.EncryptionKeySecret: the
//     cluster's key for the values hub templates encrypt ("protect"), which
//     the agent copies to the managed cluster to decrypt them. No other
//     Secret of the namespace is readable.
//
// Note: the rules are meant for a namespaced Role. Bound through a
// ClusterRoleBinding they would grant the same verbs in every namespace.
//
// Note: a list or watch is authorized against resourceNames only when it
// selects the one name (fieldSelector metadata.name=policy-encryption-key),
// so the agent's informer for the key Secret must carry that selector.
func Rules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{policyGroup}, Resources: []string{"policies"}, Verbs: slices.Clone(readWrite)},
		{APIGroups: []string{policyGroup}, Resources: []string{"policies/status"}, Verbs: slices.Clone(statusWrite)},
		{APIGroups: []string{corev1.GroupName}, Resources: []string{"events"}, Verbs: slices.Clone(eventWrite)},
		{APIGroups: []string{eventsv1.GroupName}, Resources: []string{"events"}, Verbs: slices.Clone(eventWrite)},
		{APIGroups: []string{coordinationv1.GroupName}, Resources: []string{"leases"}, Verbs: slices.Clone(leaseWrite)},
		{
			APIGroups: []string{corev1.GroupName}, Resources: []string{"secrets"},
			ResourceNames: []string{templating.EncryptionKeySecret}, Verbs: slices.Clone(readOnly),
		},
	}
}

// Role returns the Role granting Rules in clusterNamespace.
func Role(clusterNamespace string) *rbacv1.Role {
	return &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"},
		ObjectMeta: objectMeta(clusterNamespace),
		Rules:      Rules(),
	}
}

// RoleBinding returns the RoleBinding of Role in clusterNamespace to subjects,
// usually one of GroupSubject, UserSubject or ServiceAccountSubject.
func RoleBinding(clusterNamespace string, subjects ...rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
		ObjectMeta: objectMeta(clusterNamespace),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: Name},
		Subjects:   append([]rbacv1.Subject(nil), subjects...),
	}
}

// User returns the user name OCM's addon registration (CSR flow) gives the
// agent of cluster; it matches addon-framework's agent.DefaultUser.
func User(cluster string) string {
	return fmt.Sprintf("system:open-cluster-management:cluster:%s:addon:%s:agent:%s", cluster, AddonName, AgentName)
}

// Group returns the group that OCM gives only the addon agent of cluster; it
// is the first of addon-framework's agent.DefaultGroups.
func Group(cluster string) string {
	return fmt.Sprintf("system:open-cluster-management:cluster:%s:addon:%s", cluster, AddonName)
}

// Groups returns all the groups OCM gives the agent of cluster, as
// addon-framework's agent.DefaultGroups does.
//
// Note: the second group is shared by the agents of every cluster; never bind
// it in a cluster namespace, bind Group instead.
func Groups(cluster string) []string {
	return []string{Group(cluster), fmt.Sprintf("system:open-cluster-management:addon:%s", AddonName)}
}

// GroupSubject is the subject to bind for an agent registered through OCM.
func GroupSubject(cluster string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: Group(cluster)}
}

// UserSubject is the subject for a user name.
func UserSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
}

// ServiceAccountSubject is the subject for a ServiceAccount, the agent's
// identity when clusters are not registered through OCM (for example kind
// clusters in the e2e suite).
func ServiceAccountSubject(namespace, name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}
}

func objectMeta(namespace string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: Name, Namespace: namespace, Labels: maps.Clone(Labels)}
}
