package v1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// CertificatePolicyKind is the kind of CertificatePolicy.
const CertificatePolicyKind = "CertificatePolicy"

// CertificatePolicySpec says which certificates a CertificatePolicy checks
// and what makes one non-compliant. The wire format is OCM's
// (cert-policy-controller), so that existing policies apply unchanged.
//
// Note: the durations are Go durations ("672h", not "28d"); the pattern
// makes the API server refuse what the agent could not decode.
type CertificatePolicySpec struct {
	// RemediationAction is accepted for OCM compatibility; a
	// CertificatePolicy only informs: nothing enforces a certificate.
	//
	// +optional
	RemediationAction RemediationAction `json:"remediationAction,omitempty"`

	// NamespaceSelector selects the namespaces whose TLS Secrets are
	// checked. A selector with neither include patterns nor a label selector
	// selects nothing.
	//
	// +optional
	NamespaceSelector Target `json:"namespaceSelector,omitempty"`

	// LabelSelector restricts the checked Secrets to those carrying all of
	// these labels.
	//
	// +optional
	LabelSelector map[string]NonEmptyString `json:"labelSelector,omitempty"`

	// Severity is the severity of a violation.
	//
	// +optional
	Severity Severity `json:"severity,omitempty"`

	// MinDuration is the least time a certificate may have left before it
	// expires; 672h (28 days) when unset, as in OCM.
	//
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^(?:[0-9]+(?:\.[0-9]+)?(?:h|m|s|ms|us|µs|ns))+$`
	MinDuration *metav1.Duration `json:"minimumDuration,omitempty"`

	// MinCADuration is the least time a CA certificate may have left before
	// it expires; MinDuration applies to CA certificates when unset.
	//
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^(?:[0-9]+(?:\.[0-9]+)?(?:h|m|s|ms|us|µs|ns))+$`
	MinCADuration *metav1.Duration `json:"minimumCADuration,omitempty"`

	// MaxDuration is the longest validity (notAfter - notBefore) a
	// certificate may have.
	//
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^(?:[0-9]+(?:\.[0-9]+)?(?:h|m|s|ms|us|µs|ns))+$`
	MaxDuration *metav1.Duration `json:"maximumDuration,omitempty"`

	// MaxCADuration is the longest validity a CA certificate may have;
	// MaxDuration applies to CA certificates when unset.
	//
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^(?:[0-9]+(?:\.[0-9]+)?(?:h|m|s|ms|us|µs|ns))+$`
	MaxCADuration *metav1.Duration `json:"maximumCADuration,omitempty"`

	// AllowedSANPattern is a Go regular expression every DNS SAN of a
	// certificate must match.
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	AllowedSANPattern string `json:"allowedSANPattern,omitempty"`

	// DisallowedSANPattern is a Go regular expression no DNS SAN of a
	// certificate may match.
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	DisallowedSANPattern string `json:"disallowedSANPattern,omitempty"`
}

// CertificatePolicyStatus is the outcome of the latest evaluation.
type CertificatePolicyStatus struct {
	// ComplianceState is Compliant when no selected certificate violates
	// the policy, NonCompliant otherwise.
	//
	// +optional
	// +kubebuilder:validation:Enum=Compliant;NonCompliant
	ComplianceState ComplianceState `json:"compliant,omitempty"`

	// CompliancyDetails are the findings per selected namespace (the empty
	// key when no namespace is selected).
	//
	// +optional
	CompliancyDetails map[string]CertificateCompliancyDetails `json:"compliancyDetails,omitempty"`
}

// CertificateCompliancyDetails are the findings of a CertificatePolicy in
// one namespace. The field names are OCM's, capitals included.
type CertificateCompliancyDetails struct {
	// NonCompliantCertificates is how many certificates violate the policy.
	//
	// +optional
	NonCompliantCertificates uint `json:"NonCompliantCertificates,omitempty"`

	// NonCompliantCertificatesList are those certificates, by certificate
	// name (the certificate-name label, else the Secret's name).
	//
	// +optional
	NonCompliantCertificatesList map[string]CertificateDetails `json:"NonCompliantCertificatesList,omitempty"`

	// Message summarises the namespace's findings.
	//
	// +optional
	Message string `json:"message,omitempty"`
}

// CertificateDetails describe a non-compliant certificate: its Secret, how
// long it is valid and for what names. Never any key material.
type CertificateDetails struct {
	// Secret is the name of the Secret holding the certificate.
	//
	// +optional
	Secret string `json:"secretName,omitempty"`

	// Expiration is the time left before the certificate expires, as a Go
	// duration string, at the evaluation.
	//
	// +optional
	Expiration string `json:"expiration,omitempty"`

	// Expiry is Expiration in nanoseconds.
	//
	// +optional
	Expiry time.Duration `json:"expiry,omitempty"`

	// CA says whether the certificate is a CA certificate.
	//
	// +optional
	CA bool `json:"ca,omitempty"`

	// Duration is the certificate's validity (notAfter - notBefore) in
	// nanoseconds.
	//
	// +optional
	Duration time.Duration `json:"duration,omitempty"`

	// Sans are the certificate's DNS subject alternative names.
	//
	// +optional
	Sans []string `json:"sans,omitempty"`
}

// CertificatePolicy checks the TLS certificates held in Secrets on the
// managed cluster it lives on: time left before expiry, validity, and
// subject alternative names. It is a policy template: Policies deliver it,
// and it reports compliance through events on its parent Policy.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=certificatepolicies,scope=Namespaced
// +kubebuilder:metadata:labels="policy.open-cluster-management.io/policy-type=template"
// +kubebuilder:printcolumn:name="Compliance state",type="string",JSONPath=".status.compliant"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type CertificatePolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what the policy checks.
	//
	// +optional
	Spec CertificatePolicySpec `json:"spec,omitempty"`

	// Status is the observed compliance.
	//
	// +optional
	Status CertificatePolicyStatus `json:"status,omitempty"`
}

// CertificatePolicyList is a list of CertificatePolicy.
//
// +kubebuilder:object:root=true
type CertificatePolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the certificate policies.
	Items []CertificatePolicy `json:"items"`
}

// Note: registered here rather than in addKnownTypes, so that the kind
// lives in one file.
func init() {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, &CertificatePolicy{}, &CertificatePolicyList{})
		return nil
	})
}
