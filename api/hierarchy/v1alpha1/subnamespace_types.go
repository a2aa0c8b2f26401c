package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SubNamespaceSpec is the desired state of a SubNamespace.
type SubNamespaceSpec struct {
	// Labels are set on the child namespace.
	//
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// Annotations are set on the child namespace.
	//
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// SubNamespaceStatus is the observed state of a SubNamespace.
type SubNamespaceStatus struct {
	// Conditions say whether the child namespace exists and is this
	// SubNamespace's (its hierarchy.canopy.io/parent label names this
	// SubNamespace's namespace).
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Namespace is the name of the child namespace once it was created;
	// empty before.
	//
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// SubNamespace creates a child namespace, named like the SubNamespace, of
// the root or sub-namespace it lives in. Deleting it deletes the child only
// while the child's hierarchy.canopy.io/parent label still names this
// namespace.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=subnamespaces,scope=Namespaced,shortName=subns
// +kubebuilder:printcolumn:name="Namespace",type="string",JSONPath=".status.namespace"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63 && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="the name of a SubNamespace is the name of its child namespace: at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit"
type SubNamespace struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state of the child namespace.
	//
	// +optional
	Spec SubNamespaceSpec `json:"spec,omitempty"`

	// Status is the observed state of the child namespace.
	//
	// +optional
	Status SubNamespaceStatus `json:"status,omitempty"`
}

// SubNamespaceList is a list of SubNamespace.
//
// +kubebuilder:object:root=true
type SubNamespaceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the sub-namespaces.
	Items []SubNamespace `json:"items"`
}
