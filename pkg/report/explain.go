package report

import (
	"cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/pkg/compliance"
	"github.com/canopy-policy/canopy/pkg/replica"
)

// PolicyRef names a root policy on the hub.
type PolicyRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// String returns "namespace/name".
func (r PolicyRef) String() string { return r.Namespace + "/" + r.Name }

// Explanation says why a root policy is in its state: per cluster, per
// template, the state, the unmet dependencies, the cycle and the latest
// history.
type Explanation struct {
	// Policy is the root policy explained.
	Policy PolicyRef `json:"policy"`
	// Disabled is the root policy's spec.disabled.
	Disabled bool `json:"disabled,omitempty"`
	// Compliant is the root policy's overall compliance.
	Compliant policyv1.ComplianceState `json:"compliant,omitempty"`
	// Placement is the message of the root's Propagated condition: where
	// the hub replicated the policy, or why it did not (no binding, a
	// Placement without decisions and why, a failure).
	Placement string `json:"placement,omitempty"`
	// Clusters are the clusters the policy is placed on or has a replica
	// on, sorted by name.
	Clusters []ClusterExplanation `json:"clusters"`
	// Excluded are the clusters PolicySets' exclusions keep the policy off,
	// sorted by cluster (RootExclusions).
	Excluded []Exclusion `json:"excluded,omitempty"`
}

// ClusterExplanation is the state of one replica of the policy.
type ClusterExplanation struct {
	// Cluster is the managed cluster's name.
	Cluster string `json:"cluster"`
	// Compliant is the replica's status.compliant (the root's view of the
	// cluster when the replica is missing).
	Compliant policyv1.ComplianceState `json:"compliant,omitempty"`
	// NoReplica is true when the root status names the cluster but no
	// replica exists in its namespace (not propagated yet, or removed).
	NoReplica bool `json:"noReplica,omitempty"`
	// Templates are the policy's templates, in spec order, then any the
	// status reports that the spec no longer has.
	Templates []TemplateExplanation `json:"templates"`
}

// TemplateExplanation is the state of one policy template on one cluster.
type TemplateExplanation struct {
	// Kind is the template's kind, for example ConfigurationPolicy; empty
	// when only the status names the template.
	Kind string `json:"kind,omitempty"`
	// Name is the template's metadata.name.
	Name string `json:"name"`
	// Compliant is the template's latest compliance; empty until it reports.
	Compliant policyv1.ComplianceState `json:"compliant,omitempty"`
	// Message is the latest compliance message, without the leading state.
	Message string `json:"message,omitempty"`
	// IgnorePending is true when the template's dependencies are unmet but
	// it reports Compliant because of ignorePending.
	IgnorePending bool `json:"ignorePending,omitempty"`
	// Unmet are the dependencies the latest message says are not met.
	Unmet []UnmetDependency `json:"unmet,omitempty"`
	// Cycle is the dependency cycle the template is on, first node repeated
	// at the end; nil when there is none.
	Cycle []ObjectRef `json:"cycle,omitempty"`
	// History are the latest compliance messages, newest first.
	History []HistoryEntry `json:"history,omitempty"`
}

// ObjectRef is an object as the agent names it on the managed cluster, in
// a Pending or cycle message: a kind and a name in the cluster namespace.
type ObjectRef struct {
	// Kind is the object's kind, for example Policy.
	Kind string `json:"kind"`
	// Name is the object's name; a Policy's is "<root namespace>.<root name>".
	Name string `json:"name"`
	// Policy is the root policy a Policy reference stands for.
	Policy *PolicyRef `json:"policy,omitempty"`
}

// String returns "Kind name", with a Policy named by its root policy
// ("Policy namespace/name").
func (o ObjectRef) String() string { return o.display().String() }

// display is o as users read it, with a Policy named by its root policy.
func (o ObjectRef) display() compliance.DependencyRef {
	if o.Policy != nil {
		return compliance.DependencyRef{Kind: o.Kind, Name: o.Policy.String()}
	}
	return compliance.DependencyRef{Kind: o.Kind, Name: o.Name}
}

// UnmetDependency is a dependency of a template that is not met, and why.
type UnmetDependency struct {
	ObjectRef
	// Reason is why: "not found", "no API mapping for the kind", "no
	// status.compliant", or "want X got Y".
	Reason string `json:"reason,omitempty"`
	// Want and Got are the required and the found compliance of a
	// mismatch; empty for other reasons.
	Want policyv1.ComplianceState `json:"want,omitempty"`
	Got  policyv1.ComplianceState `json:"got,omitempty"`
}

// HistoryEntry is one compliance message of a template.
type HistoryEntry struct {
	// Time is when the compliance event was last seen.
	Time metav1.Time `json:"time"`
	// State is the compliance the message reports.
	State policyv1.ComplianceState `json:"compliant,omitempty"`
	// Message is the message without the leading state.
	Message string `json:"message,omitempty"`
	// EventName names the compliance event.
	EventName string `json:"eventName,omitempty"`
}

// ExplainOptions narrow an Explanation.
type ExplainOptions struct {
	// Cluster, when set, keeps only that cluster.
	Cluster string
	// History is the number of history entries kept per template; 0 keeps
	// none.
	History int
	// PolicySets are where the reasons of exclusions are read: the
	// PolicySets of the root's namespace (others are ignored).
	PolicySets []policyv1beta1.PolicySet
}

// Explain builds the explanation of root from its replicas (Policies
// labelled with its root-policy label, in any cluster namespace; others are
// ignored).
func Explain(root *policyv1.Policy, replicas []policyv1.Policy, opts ExplainOptions) Explanation {
	e := Explanation{
		Policy:    PolicyRef{Namespace: root.Namespace, Name: root.Name},
		Disabled:  root.Spec.Disabled,
		Compliant: root.Status.ComplianceState,
		Clusters:  []ClusterExplanation{},
	}
	if c := meta.FindStatusCondition(root.Status.Conditions, policyv1.ConditionPropagated); c != nil {
		e.Placement = c.Message
	}
	byCluster := map[string]*policyv1.Policy{}
	label := replica.Name(root)
	for i := range replicas {
		r := &replicas[i]
		if r.Labels[policyv1.RootPolicyLabel] == label {
			byCluster[cmp.Or(r.Labels[policyv1.ClusterNameLabel], r.Namespace)] = r
		}
	}
	for _, x := range RootExclusions(root, opts.PolicySets) {
		if opts.Cluster == "" || x.Cluster == opts.Cluster {
			e.Excluded = append(e.Excluded, x)
		}
	}
	rootView := map[string]policyv1.ComplianceState{}
	for _, s := range root.Status.Status {
		rootView[s.ClusterName] = s.ComplianceState
	}
	for _, c := range clusterNames(byCluster, rootView) {
		if opts.Cluster != "" && c != opts.Cluster {
			continue
		}
		replica, ok := byCluster[c]
		if !ok {
			e.Clusters = append(e.Clusters, ClusterExplanation{Cluster: c, Compliant: rootView[c], NoReplica: true,
				Templates: explainTemplates(&root.Spec, nil, opts.History)})
			continue
		}
		e.Clusters = append(e.Clusters, ClusterExplanation{Cluster: c, Compliant: replica.Status.ComplianceState,
			Templates: explainTemplates(&replica.Spec, replica.Status.Details, opts.History)})
	}
	return e
}

func clusterNames(replicas map[string]*policyv1.Policy, rootView map[string]policyv1.ComplianceState) []string {
	var names []string
	for c := range replicas {
		names = append(names, c)
	}
	for c := range rootView {
		names = append(names, c)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// explainTemplates explains the templates of spec from their status
// details.
func explainTemplates(spec *policyv1.PolicySpec, details []policyv1.DetailsPerTemplate, history int) []TemplateExplanation {
	out := []TemplateExplanation{}
	seen := map[string]bool{}
	for _, t := range spec.PolicyTemplates {
		kind, name := t.KindAndName()
		seen[name] = true
		te := TemplateExplanation{Kind: kind, Name: name}
		if i := slices.IndexFunc(details, func(d policyv1.DetailsPerTemplate) bool { return d.TemplateMeta.Name == name }); i >= 0 {
			fillFromDetails(&te, details[i], history)
		}
		out = append(out, te)
	}
	for _, d := range details {
		if !seen[d.TemplateMeta.Name] {
			te := TemplateExplanation{Name: d.TemplateMeta.Name}
			fillFromDetails(&te, d, history)
			out = append(out, te)
		}
	}
	return out
}

// fillFromDetails sets the state, message, unmet dependencies, cycle and
// history of te from the template's status details.
func fillFromDetails(te *TemplateExplanation, d policyv1.DetailsPerTemplate, history int) {
	te.Compliant = d.ComplianceState
	for i, h := range d.History {
		state, msg, err := compliance.ParseMessage(h.Message)
		if err != nil {
			msg = h.Message
		}
		if i == 0 {
			te.Message = msg
			te.Unmet, te.IgnorePending, _ = ParsePending(msg)
			te.Cycle = ParseCycle(msg)
		}
		if i < history {
			te.History = append(te.History, HistoryEntry{Time: h.LastTimestamp, State: state, Message: msg, EventName: h.EventName})
		}
	}
}
