// Package v1beta1 contains the policy.open-cluster-management.io/v1beta1 API
// types: PolicySet and OperatorPolicy, wire-compatible with Open Cluster
// Management's.
//
// +kubebuilder:object:generate=true
// +groupName=policy.open-cluster-management.io
package v1beta1
