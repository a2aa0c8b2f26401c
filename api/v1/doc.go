// Package v1 contains the policy.open-cluster-management.io/v1 API types:
// Policy, PlacementBinding, ConfigurationPolicy and CertificatePolicy.
//
// The types are wire-compatible with the Open Cluster Management governance
// policy framework: the JSON field names, enums and defaults match OCM's, so
// that existing OCM policies (for example those of the public
// policy-collection) apply unchanged. Canopy extensions are optional fields
// that OCM clients ignore.
//
// +kubebuilder:object:generate=true
// +groupName=policy.open-cluster-management.io
package v1
