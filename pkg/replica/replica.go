package replica

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/templating"
)

const (
	// ManagedByLabel marks the replicas as written by Canopy.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// ManagedByValue is the value of ManagedByLabel.
	ManagedByValue = "canopy"

	// argoCompareOptionsAnnotation keeps Argo CD from reporting (and
	// pruning) replicas as extraneous resources of the application that
	// manages their root, whose tracking labels they inherit.
	argoCompareOptionsAnnotation = "argocd.argoproj.io/compare-options"
	argoIgnoreExtraneous         = "IgnoreExtraneous"

	// lastAppliedAnnotation describes the root as kubectl applied it, not
	// the replica: it is never copied.
	lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"
)

// Cluster is a managed cluster a root policy is replicated to, as placement
// resolution selects it.
type Cluster struct {
	// Name is the managed cluster's name; its hub namespace has the same name.
	Name string
	// Enforce is true when a binding selecting the cluster overrides the
	// remediationAction to enforce.
	Enforce bool
}

// Name returns the name of the replicas of root, which is also the value
// of their RootPolicyLabel: "<namespace>.<name>".
func Name(root *policyv1.Policy) string {
	return root.Namespace + "." + root.Name
}

// RootOf returns the root policy named by a RootPolicyLabel value, and
// false when the value is not "<namespace>.<name>".
//
// Note: namespaces cannot contain dots, so the first dot ends the namespace.
func RootOf(label string) (types.NamespacedName, bool) {
	ns, name, ok := strings.Cut(label, ".")
	if !ok || ns == "" || name == "" {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: ns, Name: name}, true
}

// IsReplica reports whether p is a replica (it carries RootPolicyLabel).
func IsReplica(p metav1.Object) bool {
	_, ok := p.GetLabels()[policyv1.RootPolicyLabel]
	return ok
}

// Build returns the replica of root for cluster: its spec (with the
// cluster's overrides and canonical dependencies), labels and annotations.
// It never carries status, finalizers or owner references.
func Build(root *policyv1.Policy, cluster Cluster, members PolicySetMembers) *policyv1.Policy {
	replica := &policyv1.Policy{
		TypeMeta: metav1.TypeMeta{APIVersion: policyv1.GroupVersion.String(), Kind: policyv1.PolicyKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:        Name(root),
			Namespace:   cluster.Name,
			Labels:      labelsOf(root, cluster),
			Annotations: annotationsOf(root),
		},
	}
	root.Spec.DeepCopyInto(&replica.Spec)
	if cluster.Enforce && !replica.Spec.RemediationAction.IsEnforce() {
		replica.Spec.RemediationAction = policyv1.RemediationAction(strings.ToLower(string(policyv1.Enforce)))
	}
	replica.Spec.Dependencies = CanonicalDependencies(replica.Spec.Dependencies, root.Namespace, members)
	for i := range replica.Spec.PolicyTemplates {
		t := &replica.Spec.PolicyTemplates[i]
		t.ExtraDependencies = CanonicalDependencies(t.ExtraDependencies, root.Namespace, members)
	}
	return replica
}

// copyAll reports whether all of root's labels and annotations are copied
// to its replicas (spec.copyPolicyMetadata, true by default).
func copyAll(root *policyv1.Policy) bool {
	return root.Spec.CopyPolicyMetadata == nil || *root.Spec.CopyPolicyMetadata
}

// labelsOf are the labels of the replica of root for cluster: the root's
// (per spec.copyPolicyMetadata), and those that name its root and cluster.
func labelsOf(root *policyv1.Policy, cluster Cluster) map[string]string {
	labels := copyMetadata(root.Labels, copyAll(root))
	labels[policyv1.RootPolicyLabel] = Name(root)
	labels[policyv1.ClusterNameLabel] = cluster.Name
	labels[policyv1.ClusterNamespaceLabel] = cluster.Name
	labels[ManagedByLabel] = ManagedByValue
	return labels
}

// annotationsOf are the root's annotations, but for those that are the
// root's own: kubectl's, trigger-update (which forces a resolution of hub
// templates, and would otherwise write every replica) and the IV (each
// replica has its own, which the hub template step sets).
func annotationsOf(root *policyv1.Policy) map[string]string {
	annotations := copyMetadata(root.Annotations, copyAll(root))
	delete(annotations, lastAppliedAnnotation)
	delete(annotations, templating.TriggerUpdateAnnotation)
	delete(annotations, templating.IVAnnotation)
	annotations[argoCompareOptionsAnnotation] = argoIgnoreExtraneous
	return annotations
}

// copyMetadata copies all of m, or only the keys of the policy API group.
func copyMetadata(m map[string]string, all bool) map[string]string {
	out := make(map[string]string, len(m)+4)
	for k, v := range m {
		if all || strings.HasPrefix(k, policyv1.GroupName+"/") {
			out[k] = v
		}
	}
	return out
}
