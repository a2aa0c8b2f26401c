package v1

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// NonEmptyString is a string of at least one character.
//
// Note: a named type because kubebuilder markers cannot reach the items of
// a []string field.
//
// +kubebuilder:validation:MinLength=1
type NonEmptyString string

// Severity is a user-defined severity of a violation of the policy.
//
// +kubebuilder:validation:Enum=low;Low;medium;Medium;high;High;critical;Critical
type Severity string

// PruneObjectBehavior says which objects a ConfigurationPolicy deletes when
// it is deleted or stops managing them.
//
// +kubebuilder:validation:Enum=DeleteAll;DeleteIfCreated;None
type PruneObjectBehavior string

const (
	// PruneDeleteAll deletes every object the policy manages.
	PruneDeleteAll PruneObjectBehavior = "DeleteAll"
	// PruneDeleteIfCreated deletes only the objects the policy created.
	PruneDeleteIfCreated PruneObjectBehavior = "DeleteIfCreated"
	// PruneNone deletes nothing.
	PruneNone PruneObjectBehavior = "None"
)

// ComplianceType says how an object template is compared with the objects
// on the cluster. OCM accepts three capitalisations of each value; compare
// with IsMustHave, IsMustOnlyHave and IsMustNotHave rather than with ==.
type ComplianceType string

const (
	// MustHave means the object must exist and contain the template (a
	// subset match).
	MustHave ComplianceType = "MustHave"
	// MustOnlyHave means the object must exist and match the template
	// exactly in the fields it sets (lists and maps included).
	MustOnlyHave ComplianceType = "MustOnlyHave"
	// MustNotHave means no object may match the template.
	MustNotHave ComplianceType = "MustNotHave"
)

// IsMustHave reports whether c is musthave, in any capitalisation.
func (c ComplianceType) IsMustHave() bool { return strings.EqualFold(string(c), string(MustHave)) }

// IsMustOnlyHave reports whether c is mustonlyhave, in any capitalisation.
func (c ComplianceType) IsMustOnlyHave() bool {
	return strings.EqualFold(string(c), string(MustOnlyHave))
}

// IsMustNotHave reports whether c is mustnothave, in any capitalisation.
func (c ComplianceType) IsMustNotHave() bool {
	return strings.EqualFold(string(c), string(MustNotHave))
}

// RecordDiff says whether and where the difference between an object and
// its template is recorded. Unset, it is InStatus, except for kinds that
// hold sensitive data (ConfigMap, Secret, OAuthAccessToken,
// OAuthAuthorizeTokens, Route) and templates that read Secrets or
// encrypted values, whose difference is replaced by a notice, as in OCM.
// A Secret's difference is never recorded.
//
// +kubebuilder:validation:Enum=Log;InStatus;None
type RecordDiff string

const (
	// RecordDiffLog logs the difference in the controller's log.
	RecordDiffLog RecordDiff = "Log"
	// RecordDiffInStatus records the difference in status.relatedObjects.
	RecordDiffInStatus RecordDiff = "InStatus"
	// RecordDiffNone records nothing.
	RecordDiffNone RecordDiff = "None"
)

// RecreateOption says when an object is deleted and created again instead of
// updated.
//
// +kubebuilder:validation:Enum=None;IfRequired;Always
type RecreateOption string

const (
	// RecreateNone never recreates.
	RecreateNone RecreateOption = "None"
	// RecreateIfRequired recreates when an update changes an immutable field.
	RecreateIfRequired RecreateOption = "IfRequired"
	// RecreateAlways recreates on every update.
	RecreateAlways RecreateOption = "Always"
)

// Target selects namespaces by name patterns and labels. All rules combine:
// a namespace must match include (or, when include is empty and a label
// selector is set, any name), match the label selector, and match no exclude.
type Target struct {
	*metav1.LabelSelector `json:",inline"`

	// Include are filepath patterns of the names to select.
	//
	// +optional
	Include []NonEmptyString `json:"include,omitempty"`

	// Exclude are filepath patterns of the names to leave out.
	//
	// +optional
	Exclude []NonEmptyString `json:"exclude,omitempty"`
}

// NamespaceSelector is the namespaceSelector of a ConfigurationPolicy: a
// Target, and whether it selects terminating namespaces.
type NamespaceSelector struct {
	Target `json:",inline"`

	// TerminatingInclusion says whether terminating namespaces (with a
	// deletionTimestamp) are selected: IfMatch selects them when they match
	// the other rules, Never never selects them, and Default (or empty)
	// does as the agent's default, IfMatch. The values are OCM's.
	//
	// +optional
	// +kubebuilder:default:=Default
	TerminatingInclusion TerminatingInclusion `json:"terminatingInclusion,omitempty"`
}

// TerminatingInclusion says whether a namespaceSelector selects terminating
// namespaces.
//
// +kubebuilder:validation:Enum=IfMatch;Never;Default
type TerminatingInclusion string

const (
	// TerminatingIfMatch selects terminating namespaces that match the
	// other rules.
	TerminatingIfMatch TerminatingInclusion = "IfMatch"
	// TerminatingNever never selects a terminating namespace.
	TerminatingNever TerminatingInclusion = "Never"
	// TerminatingDefault does as the agent's default (IfMatch).
	TerminatingDefault TerminatingInclusion = "Default"
)

// EvaluationInterval is the least time between two evaluations of a
// ConfigurationPolicy, per compliance state: a Go duration, "never" (do not
// evaluate again until the policy changes), or "watch" (the default:
// re-evaluate when a checked object changes, through watches).
type EvaluationInterval struct {
	// Compliant applies while the policy is compliant.
	//
	// +optional
	// +kubebuilder:validation:Pattern=`^(?:(?:[0-9]+(?:\.[0-9]+)?(?:h|m|s|ms|us|ns))+|never|watch)$`
	Compliant string `json:"compliant,omitempty"`

	// NonCompliant applies while the policy is not compliant.
	//
	// +optional
	// +kubebuilder:validation:Pattern=`^(?:(?:[0-9]+(?:\.[0-9]+)?(?:h|m|s|ms|us|ns))+|never|watch)$`
	NonCompliant string `json:"noncompliant,omitempty"`
}

// CustomMessage replaces the compliance messages with Go templates.
type CustomMessage struct {
	// Compliant is the template of the message when compliant.
	//
	// +optional
	Compliant string `json:"compliant,omitempty"`

	// NonCompliant is the template of the message when not compliant or
	// unknown.
	//
	// +optional
	NonCompliant string `json:"noncompliant,omitempty"`
}

// ObjectTemplate is the desired state of one object, or of the objects
// matching it, on the cluster.
type ObjectTemplate struct {
	// ComplianceType says how the objects are compared with the template.
	//
	// +kubebuilder:validation:Enum=MustHave;Musthave;musthave;MustOnlyHave;Mustonlyhave;mustonlyhave;MustNotHave;Mustnothave;mustnothave
	ComplianceType ComplianceType `json:"complianceType"`

	// MetadataComplianceType, when set, says how labels and annotations are
	// compared, instead of complianceType.
	//
	// +optional
	// +kubebuilder:validation:Enum=MustHave;Musthave;musthave;MustOnlyHave;Mustonlyhave;mustonlyhave
	MetadataComplianceType ComplianceType `json:"metadataComplianceType,omitempty"`

	// RecreateOption says when to delete and recreate the object instead of
	// updating it. It has no effect under inform.
	//
	// +optional
	// +kubebuilder:default=None
	RecreateOption RecreateOption `json:"recreateOption,omitempty"`

	// ObjectDefinition is the object, in whole or in part. Values may hold
	// Go templates, so it is not validated as a Kubernetes object.
	//
	// +kubebuilder:pruning:PreserveUnknownFields
	ObjectDefinition runtime.RawExtension `json:"objectDefinition"`

	// RecordDiff says whether and where to record the difference between the
	// object and the template: InStatus in
	// status.relatedObjects[].properties.diff, Log in the agent's log, None
	// nowhere. Unset, it is InStatus, except for ConfigMap, Secret,
	// OAuthAccessToken, OAuthAuthorizeTokens and Route and for templates
	// that read Secrets or encrypted values, whose difference is replaced by
	// a notice, as in OCM. A Secret's difference is never recorded.
	//
	// +optional
	RecordDiff RecordDiff `json:"recordDiff,omitempty"`

	// ObjectSelector selects the objects to check by label when the
	// template names none.
	//
	// +optional
	ObjectSelector *metav1.LabelSelector `json:"objectSelector,omitempty"`
}

// ConfigurationPolicySpec is the desired configuration of objects on the
// cluster, and what to do when the cluster differs.
//
// +kubebuilder:validation:XValidation:rule="has(self.object__dash__templates) != has(self.object__dash__templates__dash__raw)",message="exactly one of object-templates and object-templates-raw must be set"
type ConfigurationPolicySpec struct {
	// RemediationAction says whether differences are only reported (inform,
	// the default) or fixed (enforce). The parent Policy's
	// remediationAction, when set, overrides it.
	//
	// +optional
	// +kubebuilder:default=inform
	RemediationAction RemediationAction `json:"remediationAction,omitempty"`

	// Severity is the severity of a violation.
	//
	// +optional
	Severity Severity `json:"severity,omitempty"`

	// NamespaceSelector selects the namespaces of the namespaced objects
	// whose template names no namespace.
	//
	// +optional
	NamespaceSelector NamespaceSelector `json:"namespaceSelector,omitempty"`

	// ObjectTemplates are the objects to check, create, update or delete.
	//
	// +optional
	ObjectTemplates []ObjectTemplate `json:"object-templates,omitempty"`

	// ObjectTemplatesRaw is a Go template producing the YAML of the
	// object-templates list, for loops and conditionals.
	//
	// +optional
	ObjectTemplatesRaw string `json:"object-templates-raw,omitempty"`

	// PruneObjectBehavior says which objects are deleted with the policy.
	//
	// +optional
	// +kubebuilder:default=None
	PruneObjectBehavior PruneObjectBehavior `json:"pruneObjectBehavior,omitempty"`

	// EvaluationInterval is the least time between two evaluations.
	//
	// +optional
	EvaluationInterval EvaluationInterval `json:"evaluationInterval,omitempty"`

	// CustomMessage replaces the compliance messages.
	//
	// +optional
	CustomMessage CustomMessage `json:"customMessage,omitempty"`
}

// TemplateCondition is the outcome of the latest evaluation of one object
// template.
type TemplateCondition struct {
	// Type is violation or notification.
	Type string `json:"type"`

	// Status is True when set; OCM does not use it otherwise.
	//
	// +optional
	Status metav1.ConditionStatus `json:"status,omitempty"`

	// LastTransitionTime is when the condition last changed.
	//
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`

	// Reason is a short summary of the outcome.
	//
	// +optional
	Reason string `json:"reason,omitempty"`

	// Message says in words what was found.
	//
	// +optional
	Message string `json:"message,omitempty"`
}

// Validity is unused and kept only so that OCM status is not lost.
type Validity struct {
	// Valid is unused.
	//
	// +optional
	Valid *bool `json:"valid,omitempty"`

	// Reason is unused.
	//
	// +optional
	Reason string `json:"reason,omitempty"`
}

// TemplateStatus is the compliance of one object template.
//
// Note: the capitalised JSON keys "Compliant" and "Validity" are OCM's.
type TemplateStatus struct {
	// ComplianceState is the compliance of the object template.
	//
	// +optional
	// +kubebuilder:validation:Enum=Compliant;Pending;NonCompliant;Terminating
	ComplianceState ComplianceState `json:"Compliant,omitempty"`

	// Conditions are the outcomes of the latest evaluation.
	//
	// +optional
	Conditions []TemplateCondition `json:"conditions,omitempty"`

	// Validity is deprecated and unused.
	//
	// +optional
	Validity Validity `json:"Validity,omitempty"`
}

// ObjectMetadata names an object related to a policy.
type ObjectMetadata struct {
	// Name is the name of the object.
	//
	// +optional
	Name string `json:"name,omitempty"`

	// Namespace is the namespace of the object, empty if cluster-scoped.
	//
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// ObjectResource identifies an object related to a policy.
type ObjectResource struct {
	// Metadata names the object.
	//
	// +optional
	Metadata ObjectMetadata `json:"metadata,omitempty"`

	// APIVersion is the apiVersion of the object.
	//
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`

	// Kind is the kind of the object.
	//
	// +optional
	Kind string `json:"kind,omitempty"`
}

// ObjectProperties are facts about a related object that pruning and
// reporting need.
type ObjectProperties struct {
	// CreatedByPolicy says whether the policy created the object, which
	// pruneObjectBehavior DeleteIfCreated needs.
	//
	// +optional
	CreatedByPolicy *bool `json:"createdByPolicy,omitempty"`

	// UID is the object's UID, to tell a recreated object from the one the
	// policy created.
	//
	// +optional
	UID string `json:"uid,omitempty"`

	// Diff is the difference between the template and the object.
	//
	// +optional
	Diff string `json:"diff,omitempty"`

	// MatchesAfterDryRun says whether the object matched the template only
	// after a server-side dry-run update (API defaults filled in).
	//
	// +optional
	MatchesAfterDryRun bool `json:"matchesAfterDryRun,omitempty"`
}

// RelatedObject is an object a policy checked, and its compliance.
type RelatedObject struct {
	// Object identifies the object.
	//
	// +optional
	Object ObjectResource `json:"object,omitempty"`

	// Compliant is the compliance of the object with the policy.
	//
	// +optional
	Compliant string `json:"compliant,omitempty"`

	// Reason says in words why the object is or is not compliant.
	//
	// +optional
	Reason string `json:"reason,omitempty"`

	// Properties are facts used for pruning and reporting.
	//
	// +optional
	Properties *ObjectProperties `json:"properties,omitempty"`
}

// ConfigurationPolicyStatus is the observed state of a ConfigurationPolicy.
type ConfigurationPolicyStatus struct {
	// ComplianceState is the overall compliance. Empty means unknown.
	//
	// +optional
	// +kubebuilder:validation:Enum=Compliant;Pending;NonCompliant;Terminating
	ComplianceState ComplianceState `json:"compliant,omitempty"`

	// CompliancyDetails has one entry per object template, in order.
	//
	// +optional
	CompliancyDetails []TemplateStatus `json:"compliancyDetails,omitempty"`

	// RelatedObjects are the objects the object templates matched.
	//
	// +optional
	RelatedObjects []RelatedObject `json:"relatedObjects,omitempty"`

	// LastEvaluated is the RFC 3339 time of the latest evaluation.
	//
	// Note: a string, as in OCM.
	//
	// +optional
	LastEvaluated string `json:"lastEvaluated,omitempty"`

	// LastEvaluatedGeneration is the metadata.generation that was evaluated
	// last.
	//
	// +optional
	LastEvaluatedGeneration int64 `json:"lastEvaluatedGeneration,omitempty"`

	// History are the most recent compliance messages of the policy, newest
	// first, at most 10 (ConfigurationPolicyHistoryLimit): one per compliance
	// event sent to the parent Policy (or, without a parent, per change of
	// the message).
	//
	// +optional
	History []HistoryEvent `json:"history,omitempty"`
}

// ComplianceHistory returns status.history, newest first: statussync
// merges it into the parent Policy's status.details[].history.
func (p *ConfigurationPolicy) ComplianceHistory() []HistoryEvent { return p.Status.History }

// ConfigurationPolicyHistoryLimit is the length of status.history of a
// ConfigurationPolicy, as in OCM.
const ConfigurationPolicyHistoryLimit = 10

// HistoryEvent is a compliance message of a policy template and when it was
// sent.
type HistoryEvent struct {
	// LastTimestamp is when the message was sent: the time of the
	// compliance event that carried it.
	//
	// +optional
	LastTimestamp metav1.MicroTime `json:"lastTimestamp,omitempty"`

	// Message is the compliance message, starting with the state
	// ("NonCompliant; violation - ...").
	//
	// +optional
	Message string `json:"message,omitempty"`
}

// ConfigurationPolicy checks, and under enforce creates, updates or deletes,
// objects on the managed cluster it lives on. It is a policy template:
// Policies deliver it, and it reports compliance through events on its
// parent Policy.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=configurationpolicies,scope=Namespaced,shortName=cfgpol
// +kubebuilder:metadata:labels="policy.open-cluster-management.io/policy-type=template"
// +kubebuilder:printcolumn:name="Remediation action",type="string",JSONPath=".spec.remediationAction"
// +kubebuilder:printcolumn:name="Compliance state",type="string",JSONPath=".status.compliant"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type ConfigurationPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired configuration.
	//
	// +optional
	Spec ConfigurationPolicySpec `json:"spec,omitempty"`

	// Status is the observed compliance.
	//
	// +optional
	Status ConfigurationPolicyStatus `json:"status,omitempty"`
}

// ConfigurationPolicyList is a list of ConfigurationPolicy.
//
// +kubebuilder:object:root=true
type ConfigurationPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the configuration policies.
	Items []ConfigurationPolicy `json:"items"`
}
