package templatesync

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/compliance"
	"github.com/canopy-policy/canopy/pkg/depgraph"
	"github.com/canopy-policy/canopy/pkg/replica"
	"github.com/canopy-policy/canopy/pkg/templatekinds"
	"github.com/canopy-policy/canopy/pkg/templating"
)

// Template is the plan for one entry of a Policy's policy-templates.
type Template struct {
	// Name is the template object's name; it names the compliance stream.
	Name string
	// Object is the desired object, or nil when the entry is invalid.
	Object *unstructured.Unstructured
	// Deps are the template's resolved dependencies.
	Deps []depgraph.Dependency
	// IgnorePending reports unmet dependencies as Compliant.
	IgnorePending bool
	// Problem, when set, is why the template cannot be created: it is
	// reported NonCompliant and nothing is written.
	Problem string
	// Cycle, when set, is the dependency cycle the template is on: the
	// object is deleted and the cycle reported NonCompliant.
	Cycle string
	// HubError, when set, is why the template's hub templates cannot be
	// used (the hub's error annotation, or UnresolvedHubTemplates): once
	// its dependencies are met, the object is deleted without pruning and
	// the error reported NonCompliant ("template-error; <error>").
	HubError string
}

// Inputs are what Plan needs besides the Policy.
type Inputs struct {
	// TemplateKinds are the kinds whose CRD carries the policy-type label.
	TemplateKinds map[schema.GroupKind]bool
	// Graph is the dependency graph of every Policy in the namespace.
	Graph depgraph.Graph
}

// Plan returns the plan of each template of policy, in order. Entries
// without a name are skipped: they have no compliance stream to report on.
func Plan(policy *policyv1.Policy, in Inputs) []Template {
	var out []Template
	count := map[string]int{}
	for _, pt := range policy.Spec.PolicyTemplates {
		t := planOne(policy, pt, in)
		if t.Name == "" {
			continue
		}
		count[t.Name]++
		out = append(out, t)
	}
	for i := range out {
		if count[out[i].Name] > 1 {
			out[i].Problem = fmt.Sprintf("template name %s is used by %d templates of this policy: template names must be unique", out[i].Name, count[out[i].Name])
			out[i].Object = nil
		}
	}
	return out
}

func planOne(policy *policyv1.Policy, pt policyv1.PolicyTemplate, in Inputs) Template {
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(pt.ObjectDefinition.Raw); err != nil {
		_, name := pt.KindAndName()
		return Template{Name: name, Problem: fmt.Sprintf("invalid objectDefinition: %v", err)}
	}
	t := Template{Name: obj.GetName(), IgnorePending: pt.IgnorePending}
	gvk := obj.GroupVersionKind()
	if !in.TemplateKinds[gvk.GroupKind()] {
		t.Problem = UnevaluatedMessage(gvk, false)
		if templatekinds.IsGatekeeper(gvk.GroupKind()) {
			t.Problem = templating.TemplateErrorPrefix + templatekinds.GatekeeperUnmappedMessage(gvk, in.TemplateKinds[templatekinds.ConstraintTemplateGK])
		}
		return t
	}
	deps, err := depgraph.Resolve(policy.Namespace, namespacedKinds(in.TemplateKinds), policy.Spec.Dependencies, pt.ExtraDependencies)
	if err != nil {
		t.Problem = err.Error()
		return t
	}
	t.Deps = deps
	t.Object = desiredObject(policy, obj) // with HubError, only names the object to delete
	t.HubError = hubError(policy, obj, pt.ObjectDefinition.Raw)
	t.Cycle = in.Graph.CycleMessage(policy.Name, depgraph.Node{Kind: gvk.Kind, Name: t.Name})
	return t
}

// namespacedKinds returns the kinds of kinds whose templates live in the
// Policy's namespace (not Gatekeeper's cluster-scoped ones): a dependency
// on one of those is looked up there.
func namespacedKinds(kinds map[schema.GroupKind]bool) map[schema.GroupKind]bool {
	out := make(map[schema.GroupKind]bool, len(kinds))
	for gk := range kinds {
		if !templatekinds.ClusterScoped(gk) {
			out[gk] = true
		}
	}
	return out
}

func kindString(gvk schema.GroupVersionKind) string {
	if gvk.Group == "" {
		return gvk.Kind
	}
	return gvk.Kind + "." + gvk.Group
}

// desiredObject returns the template object as templatesync writes it:
// in the Policy's namespace, labelled and owned by it, with the Policy's
// remediationAction when it sets one, and the Policy's generation
// (replica.PolicyGenerationAnnotation).
//
// A cluster-scoped template (Gatekeeper's kinds) has no namespace and no
// owner reference, and always carries the Policy's namespace in the
// cluster-namespace label, as OCM's framework addon writes it: its labels
// alone tell whose it is (ownedBy). Its remediationAction is applied as
// OCM applies it (templatekinds.SetGatekeeperEnforcementAction).
func desiredObject(policy *policyv1.Policy, def *unstructured.Unstructured) *unstructured.Unstructured {
	obj := def.DeepCopy()
	clusterScoped := templatekinds.ClusterScoped(obj.GroupVersionKind().GroupKind())
	obj.SetNamespace(policy.Namespace)
	if clusterScoped {
		obj.SetNamespace("")
	}
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	for _, k := range []string{policyv1.RootPolicyLabel, policyv1.ClusterNameLabel, policyv1.ClusterNamespaceLabel} {
		if v, ok := policy.Labels[k]; ok {
			labels[k] = v
		}
	}
	labels[policyv1.PolicyLabel] = policy.Name
	if clusterScoped {
		labels[policyv1.ClusterNamespaceLabel] = policy.Namespace
	}
	obj.SetLabels(labels)
	switch {
	case clusterScoped:
		obj.SetOwnerReferences(nil)
		templatekinds.SetGatekeeperEnforcementAction(obj, string(policy.Spec.RemediationAction))
	default:
		obj.SetOwnerReferences([]metav1.OwnerReference{ownerRef(policy)})
		if policy.Spec.RemediationAction != "" {
			_ = unstructured.SetNestedField(obj.Object, string(policy.Spec.RemediationAction), "spec", "remediationAction")
		}
	}
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[replica.PolicyGenerationAnnotation] = strconv.FormatInt(policy.Generation, 10)
	obj.SetAnnotations(annotations)
	stamp(obj) // Note: the hash holds the Policy's generation, so every change of the Policy is evaluated again
	return obj
}

func ownerRef(policy *policyv1.Policy) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: policyv1.GroupVersion.String(),
		Kind:       "Policy",
		Name:       policy.Name,
		UID:        policy.UID,
		Controller: ptr.To(true),
	}
}

// HashAnnotation holds a hash of the object templatesync last wrote, so
// that a template whose source changed is rewritten even when the change
// only removes fields.
const HashAnnotation = compliance.TemplateHashAnnotation

// stamp sets HashAnnotation on obj to the hash of obj without it.
func stamp(obj *unstructured.Unstructured) {
	raw, _ := json.Marshal(obj.Object) // maps marshal with sorted keys: the hash is stable
	sum := sha256.Sum256(raw)
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[HashAnnotation] = hex.EncodeToString(sum[:8])
	obj.SetAnnotations(annotations)
}
