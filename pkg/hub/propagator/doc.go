// Package propagator replicates root Policies on the hub into the
// namespaces of the managed clusters their PlacementBindings select.
//
// It reconciles root Policies (Policies without the root-policy label) and
// writes:
//
//   - the replicas: Policy "<root namespace>.<root name>" in each selected
//     cluster's namespace, with the labels root-policy, cluster-name,
//     cluster-namespace and app.kubernetes.io/managed-by=canopy, the root's
//     spec (bindingOverrides applied, dependencies canonicalised) and its
//     labels and annotations per spec.copyPolicyMetadata. It owns the spec
//     and metadata of replicas, never their status (the agents write it);
//   - the root's status.placement: one entry per binding (and policy set)
//     binding it, whose decisions are the clusters that binding contributes;
//   - the root's condition Propagated (reasons in status.go) and, when it
//     turns to PropagationFailed or NameTooLong, a Warning event on the
//     root. Bad input (a name too long for the replica label, a binding
//     subject of an unknown kind, a Placement that is missing or has no
//     decisions, a PlacementRule) is explained in the condition's message.
//
// Status.status and status.compliant of the root, and PolicySet status, are
// pkg/hub/rootstatus's, which reads status.placement.
//
// The pure cores are ResolvePlacement (which clusters, which overrides),
// BuildReplica and CanonicalDependencies (what a replica holds),
// ReplicaUpToDate (whether to write) and PropagatedCondition.
//
// Replicas are found through the root-policy label, not owner references
// or finalizers (a replica lives in another namespace than its root): when
// a root is gone, the Reconcile of its name deletes whatever still carries
// its label. Every replica in the cache maps to its root, so the first sync
// after a start reconciles the roots of all replicas, which deletes the
// replicas orphaned while the hub was down. Nothing is written when nothing
// changed: replicas are compared before they are patched and the status is
// patched only when it differs, so a steady hub makes no writes, also after
// a restart.
//
// The cache holds Placements as metadata only; TrimPolicy drops what no hub
// controller reads from Policies. ManagedClusters are not read at all: a
// cluster's namespace is its name.
//
// Metrics: canopy_propagation_failures_total{namespace,policy} and
// canopy_propagator_reconcile_duration_seconds, beside controller-runtime's
// own per-controller metrics (controller="propagator").
package propagator
