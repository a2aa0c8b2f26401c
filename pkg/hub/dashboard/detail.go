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
	// Sets are the PolicySets the policy is a member of.
	Sets []report.PolicyRef `json:"sets"`
	// Dependencies are spec.dependencies, with the current compliance of
	// those that are policies or policy sets on the hub and, when one is
	// not met, why.
	Dependencies []DependencyView `json:"dependencies"`
	Templates    []TemplateView   `json:"templates"`
	// Rollout is the root's status.rollout; nil without a rollout strategy.
	Rollout *policyv1.RolloutStatus `json:"rollout,omitempty"`
	// Explanation is the state of each template on each cluster, its
	// unmet dependencies and latest history.
	Explanation report.Explanation `json:"explanation"`
	// Graph is the state of each node and edge of the policy's graph.
	Graph GraphState `json:"graph"`
}

// DependencyView is one dependency and, for a policy or policy set on the
// hub, its current overall compliance.
type DependencyView struct {
	Kind       string                   `json:"kind"`
	Namespace  string                   `json:"namespace,omitempty"`
	Name       string                   `json:"name"`
	Compliance policyv1.ComplianceState `json:"compliance"`
	// State is the dependency's current compliance, when the hub knows it.
	State policyv1.ComplianceState `json:"state,omitempty"`
	// Reason is why the dependency is not met, in the words of the
	// policy's cluster cards (for example "not found"); empty when it is
	// met or is judged on each cluster.
	Reason string `json:"reason,omitempty"`
}

// TemplateView is one policy template of the spec.
type TemplateView struct {
	Kind              string           `json:"kind"`
	Name              string           `json:"name"`
	IgnorePending     bool             `json:"ignorePending,omitempty"`
	ExtraDependencies []DependencyView `json:"extraDependencies,omitempty"`
}

// newPolicyView describes root from its replicas and inv, the hub's root
// policies and policy sets.
func newPolicyView(root *policyv1.Policy, replicas []policyv1.Policy, inv report.Inventory, now time.Time) PolicyView {
	v := PolicyView{
		Updated: now, Namespace: root.Namespace, Name: root.Name, Compliant: root.Status.ComplianceState,
		Disabled: root.Spec.Disabled, RemediationAction: root.Spec.RemediationAction,
		Sets:         setsOf(inv, root.Namespace, root.Name),
		Dependencies: dependencyViews(root.Namespace, root.Spec.Dependencies, inv),
		Templates:    []TemplateView{},
		Rollout:      root.Status.Rollout,
		Explanation:  report.Explain(root, replicas, report.ExplainOptions{History: historyLimit, PolicySets: inv.PolicySets}),
	}
	for _, t := range root.Spec.PolicyTemplates {
		kind, name := t.KindAndName()
		v.Templates = append(v.Templates, TemplateView{Kind: kind, Name: name, IgnorePending: t.IgnorePending,
			ExtraDependencies: dependencyViews(root.Namespace, t.ExtraDependencies, inv)})
	}
	return v
}

// setsOf returns the PolicySets of inv that have the policy as a member.
func setsOf(inv report.Inventory, namespace, name string) []report.PolicyRef {
	out := []report.PolicyRef{}
	for _, s := range inv.PolicySets {
		if s.Namespace != namespace {
			continue
		}
		for _, m := range s.Spec.Policies {
			if string(m) == name {
				out = append(out, report.PolicyRef{Namespace: s.Namespace, Name: s.Name})
				break
			}
		}
	}
	return out
}

func dependencyViews(namespace string, deps []policyv1.PolicyDependency, inv report.Inventory) []DependencyView {
	out := []DependencyView{}
	for _, d := range deps {
		dv := DependencyView{Kind: d.Kind, Namespace: d.Namespace, Name: d.Name, Compliance: d.Compliance}
		if (d.Kind == policyv1.PolicyKind || d.Kind == policyv1beta1.PolicySetKind) && dv.Namespace == "" {
			dv.Namespace = namespace
		}
		dv.State, dv.Reason = dependencyState(inv, dv)
		out = append(out, dv)
	}
	return out
}
