package dashboard

import (
	"time"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/pkg/report"
)

// historyLimit bounds the history shown per template and cluster.
const historyLimit = 10

// PolicyView is the JSON of /api/policies/{ns}/{name}: one root policy, its
// spec and the state of its templates on each cluster.
type PolicyView struct {
	Updated           time.Time                  `json:"updated"`
	Namespace         string                     `json:"namespace"`
	Name              string                     `json:"name"`
	Compliant         policyv1.ComplianceState   `json:"compliant"`
	Disabled          bool                       `json:"disabled"`
	RemediationAction policyv1.RemediationAction `json:"remediationAction"`
	// Dependencies are spec.dependencies, with the current compliance of
	// those that are policies on the hub.
	Dependencies []DependencyView `json:"dependencies"`
	Templates    []TemplateView   `json:"templates"`
	// Explanation is the state of each template on each cluster, its
	// unmet dependencies and latest history.
	Explanation report.Explanation `json:"explanation"`
}

// DependencyView is one dependency and, for a policy on the hub, its
// current overall compliance.
type DependencyView struct {
	Kind       string                   `json:"kind"`
	Namespace  string                   `json:"namespace,omitempty"`
	Name       string                   `json:"name"`
	Compliance policyv1.ComplianceState `json:"compliance"`
	// State is the dependency's current compliance, when the hub knows it.
	State policyv1.ComplianceState `json:"state,omitempty"`
}

// TemplateView is one policy template of the spec.
type TemplateView struct {
	Kind              string           `json:"kind"`
	Name              string           `json:"name"`
	IgnorePending     bool             `json:"ignorePending,omitempty"`
	ExtraDependencies []DependencyView `json:"extraDependencies,omitempty"`
}

// newPolicyView describes root from its replicas; states maps "ns/name" of
// the hub's root policies to their compliance.
func newPolicyView(root *policyv1.Policy, replicas []policyv1.Policy, states map[string]policyv1.ComplianceState,
	now time.Time) PolicyView {
	v := PolicyView{
		Updated: now, Namespace: root.Namespace, Name: root.Name, Compliant: root.Status.ComplianceState,
		Disabled: root.Spec.Disabled, RemediationAction: root.Spec.RemediationAction,
		Dependencies: dependencyViews(root.Namespace, root.Spec.Dependencies, states),
		Templates:    []TemplateView{},
		Explanation:  report.Explain(root, replicas, report.ExplainOptions{History: historyLimit}),
	}
	for _, t := range root.Spec.PolicyTemplates {
		kind, name := t.KindAndName()
		v.Templates = append(v.Templates, TemplateView{Kind: kind, Name: name, IgnorePending: t.IgnorePending,
			ExtraDependencies: dependencyViews(root.Namespace, t.ExtraDependencies, states)})
	}
	return v
}

func dependencyViews(namespace string, deps []policyv1.PolicyDependency,
	states map[string]policyv1.ComplianceState) []DependencyView {
	out := []DependencyView{}
	for _, d := range deps {
		dv := DependencyView{Kind: d.Kind, Namespace: d.Namespace, Name: d.Name, Compliance: d.Compliance}
		if (d.Kind == policyv1.PolicyKind || d.Kind == policyv1beta1.PolicySetKind) && dv.Namespace == "" {
			dv.Namespace = namespace
		}
		if d.Kind == policyv1.PolicyKind {
			dv.State = states[dv.Namespace+"/"+dv.Name]
		}
		out = append(out, dv)
	}
	return out
}
