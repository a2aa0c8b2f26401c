package main

// The agent's own permissions on the managed cluster beyond those of its
// controllers (which carry their markers in pkg/spoke/...): events for the
// compliance records it writes.
//
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
