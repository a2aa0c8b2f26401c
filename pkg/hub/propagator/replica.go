package propagator

import (
	"cmp"
	"encoding/json"
	"maps"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
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

// PolicySetMembers maps PolicySets to their member policies, for the
// canonicalisation of dependencies.
type PolicySetMembers map[types.NamespacedName][]string

// ReplicaName returns the name of the replicas of root, which is also the
// value of their RootPolicyLabel: "<namespace>.<name>".
func ReplicaName(root *policyv1.Policy) string {
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

// BuildReplica returns the replica of root for cluster: its spec (with the
// cluster's overrides and canonical dependencies), labels and annotations.
// It never carries status, finalizers or owner references.
func BuildReplica(root *policyv1.Policy, cluster Cluster, members PolicySetMembers) *policyv1.Policy {
	replica := &policyv1.Policy{
		TypeMeta: metav1.TypeMeta{APIVersion: policyv1.GroupVersion.String(), Kind: policyv1.PolicyKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:        ReplicaName(root),
			Namespace:   cluster.Name,
			Labels:      replicaLabels(root, cluster),
			Annotations: replicaAnnotations(root),
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

func replicaLabels(root *policyv1.Policy, cluster Cluster) map[string]string {
	labels := copyMetadata(root.Labels, copyAll(root))
	labels[policyv1.RootPolicyLabel] = ReplicaName(root)
	labels[policyv1.ClusterNameLabel] = cluster.Name
	labels[policyv1.ClusterNamespaceLabel] = cluster.Name
	labels[ManagedByLabel] = ManagedByValue
	return labels
}

// replicaAnnotations are the root's annotations, but for those that are
// the root's own: kubectl's, trigger-update (which forces a resolution of
// hub templates, and would otherwise write every replica) and the IV (each
// replica has its own, which the hub template step sets).
func replicaAnnotations(root *policyv1.Policy) map[string]string {
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

// CanonicalDependencies returns deps as replicas carry them: a Policy
// dependency is named "<namespace>.<name>", like the replica it depends on,
// and has no namespace (the namespace defaults to the root's); a PolicySet
// dependency becomes one Policy dependency per member, with the same
// compliance. A PolicySet absent from members is kept as it is, so that the
// agent reports it missing. Other dependencies are unchanged, duplicates are
// dropped and the order is kept.
func CanonicalDependencies(deps []policyv1.PolicyDependency, rootNamespace string, members PolicySetMembers) []policyv1.PolicyDependency {
	if deps == nil {
		return nil
	}
	out := make([]policyv1.PolicyDependency, 0, len(deps))
	seen := sets.New[policyv1.PolicyDependency]()
	add := func(d policyv1.PolicyDependency) {
		if !seen.Has(d) {
			seen.Insert(d)
			out = append(out, d)
		}
	}
	for _, dep := range deps {
		switch {
		case isPolicyDependency(dep):
			add(canonicalPolicyDependency(dep, rootNamespace))
		case isPolicySetDependency(dep):
			key := types.NamespacedName{Namespace: cmp.Or(dep.Namespace, rootNamespace), Name: dep.Name}
			policies, ok := members[key]
			if !ok {
				add(dep)
				continue
			}
			for _, p := range policies {
				add(policyDependency(key.Namespace+"."+p, dep.Compliance))
			}
		default:
			add(dep)
		}
	}
	return out
}

func canonicalPolicyDependency(dep policyv1.PolicyDependency, rootNamespace string) policyv1.PolicyDependency {
	if dep.Namespace == "" && strings.Count(dep.Name, ".") == 1 {
		return policyDependency(dep.Name, dep.Compliance) // already "<namespace>.<name>"
	}
	return policyDependency(cmp.Or(dep.Namespace, rootNamespace)+"."+dep.Name, dep.Compliance)
}

func policyDependency(name string, compliance policyv1.ComplianceState) policyv1.PolicyDependency {
	return policyv1.PolicyDependency{
		TypeMeta:   metav1.TypeMeta{APIVersion: policyv1.GroupVersion.String(), Kind: policyv1.PolicyKind},
		Name:       name,
		Compliance: compliance,
	}
}

// isPolicyDependency reports whether dep names a Policy: kind Policy of the
// policy API group, or with no apiVersion at all (as the seed examples do).
func isPolicyDependency(dep policyv1.PolicyDependency) bool {
	return dep.Kind == policyv1.PolicyKind && inPolicyGroup(dep.APIVersion)
}

// isPolicySetDependency reports whether dep names a PolicySet.
func isPolicySetDependency(dep policyv1.PolicyDependency) bool {
	return dep.Kind == policyv1beta1.PolicySetKind && inPolicyGroup(dep.APIVersion)
}

func inPolicyGroup(apiVersion string) bool {
	return apiVersion == "" || strings.HasPrefix(apiVersion, policyv1.GroupName+"/")
}

// PolicySetDependencies returns the PolicySets root depends on, in its spec
// or its templates.
func PolicySetDependencies(root *policyv1.Policy) []types.NamespacedName {
	var out []types.NamespacedName
	visit := func(deps []policyv1.PolicyDependency) {
		for _, d := range deps {
			if isPolicySetDependency(d) {
				out = append(out, types.NamespacedName{Namespace: cmp.Or(d.Namespace, root.Namespace), Name: d.Name})
			}
		}
	}
	visit(root.Spec.Dependencies)
	for _, t := range root.Spec.PolicyTemplates {
		visit(t.ExtraDependencies)
	}
	return out
}

// ReplicaUpToDate reports whether existing already has the labels,
// annotations and spec of desired.
func ReplicaUpToDate(desired, existing *policyv1.Policy) bool {
	return mapsEqual(desired.Labels, existing.Labels) &&
		mapsEqual(desired.Annotations, existing.Annotations) &&
		specsEqual(&desired.Spec, &existing.Spec)
}

func mapsEqual(a, b map[string]string) bool {
	return len(a) == len(b) && maps.Equal(a, b)
}

// specsEqual compares specs semantically; it falls back to comparing their
// JSON forms so that an embedded template serialised differently (key
// order, spacing) but meaning the same never causes a write.
func specsEqual(a, b *policyv1.PolicySpec) bool {
	if equality.Semantic.DeepEqual(a, b) {
		return true
	}
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	if errA != nil || errB != nil {
		return false
	}
	var va, vb any
	if json.Unmarshal(ja, &va) != nil || json.Unmarshal(jb, &vb) != nil {
		return false
	}
	return equality.Semantic.DeepEqual(va, vb)
}
