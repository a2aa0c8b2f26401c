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
//     binding it, whose decisions are the clusters that binding contributes
//     and, through a set, whose exclusions are the clusters the set's
//     spec.exclusions keep the policy off;
//   - the root's condition Propagated (reasons in status.go) and, when it
//     turns to PropagationFailed, NameTooLong or InClusterNamespace, a
//     Warning event on the root. Bad input (a name too long for the
//     replica label, a root in a cluster namespace, a binding subject of an
//     unknown kind, a Placement that is missing or has no decisions, a
//     PlacementRule, a hub template that fails) is explained in the
//     condition's message;
//   - the Secret policy-encryption-key of a cluster namespace, when hub
//     templates encrypt for a cluster that has none;
//   - the root's status.rollout, when a rollout strategy applies (below),
//     and the condition RolledOut of a PolicySet whose strategy applies.
//
// PolicySet exclusions (OCM's spec.exclusions). A binding that names a set
// contributes, for each member, the clusters of its Placement less those
// the set's exclusions name for that member; a binding that names the
// policy itself, or another set, is not affected, so the cluster may still
// be selected through it. Nothing else keeps the excluded cluster: its
// replica is deleted like that of any cluster no longer selected, and a
// rollout neither waits for it nor, through a set, for an excluded member
// there (ExcludeFromRollouts). The admission policy
// policyset-exclusions.policy.open-cluster-management.io refuses an
// exclusion of a policy that is not a member.
//
// A root in the namespace of a managed cluster (a ManagedCluster of that
// name exists: OCM's test) is not propagated: that namespace holds the
// cluster's replicas and its encryption key. It gets no replica (those it
// had are deleted) and Propagated False with ReasonInClusterNamespace
// (clusternamespace.go); a ManagedCluster created or deleted reconciles the
// roots of its namespace.
//
// # Rollout
//
// spec.rolloutStrategy of the root, or else of the PolicySet through which
// a binding names it, is OCM's RolloutStrategy. Without one, or with All,
// every selected cluster gets the current spec at once and status.rollout
// is absent. Otherwise the rollout handler of OCM's sdk-go decides, per
// Placement and from its PlacementDecisions' decision-group labels, which
// clusters get the current spec now (PlanRollout). The other clusters'
// replicas keep their previous spec, or are not created yet. Whether a
// replica has the current spec is observed (its spec, compared with the
// desired one), so a change to the root's spec mid-rollout starts again
// from the first decision group; a change of metadata only (labels,
// annotations) leaves the replica's generation as it is and reaches every
// cluster at once. The only state kept is in status.rollout: when each
// cluster was updated and last changed state, so that a hub restart
// resumes the rollout. It is written before the replicas it shows updated:
// a restart, or a status write that fails, never leaves a replica with a
// new spec that status.rollout does not show updated, and no replica of a
// later group is written when it cannot be. A mandatory decision group that
// names no group of the Placement, or decisions without a readable group
// index, hold every cluster of that Placement (status.rollout says why)
// rather than update them all at once; a strategy the handler cannot read
// turns Propagated False with ReasonInvalidRolloutStrategy. Changes of a
// replica's status.compliant or status.evaluatedGeneration reconcile its
// root only while the root has status.rollout, and the deadlines are
// rechecked with RequeueAfter.
//
// Which report counts. A replica written with a new spec gets a new
// metadata.generation, and shows the previous spec's compliance until its
// agent has evaluated the new one. The agent says which generation it has
// fully evaluated (every template synced, evaluated and its compliance
// recorded) in the replica's status.evaluatedGeneration, as OCM's other
// rollout consumers read an observed generation. A cluster whose replica
// has the current spec stands by that report, read with the compliance from
// one object (the cache, and the API server before a cluster turns
// Succeeded, so that a lagging cache never moves the rollout on): while
// evaluatedGeneration is not the replica's generation it is Progressing;
// then Succeeded when Compliant, Failed (sdk-go's Failed, which counts
// against maxFailures with or without a progressDeadline) when
// NonCompliant, Progressing when Pending or unknown. A Progressing or
// Failed cluster times out once progressDeadline has passed since its
// update, and counts against maxFailures. No report time, and so no
// clock, decides anything. A change that reaches no template object
// (dependencies, ignorePending, a template removed or reordered) is still
// a new generation, which the agent evaluates and reports at once.
//
// PolicySets. When the strategy comes from a PolicySet (the policy has none
// of its own), the set rolls out as a unit through each Placement: a
// cluster counts as succeeded for every member only when every member that
// rolls out with the set (it exists, is enabled and has no strategy of its
// own) has succeeded there, each read from its own status.rollout, and as
// failed when one of them has failed there.
// So the production groups get none of the set's policies before the
// canary has all of them Compliant, and one member failing on the canary
// stops the rollout of every member, whose status.rollout names the policy
// and cluster that failed. A change of one member's status.rollout
// reconciles the others. Each member's reconcile also sets the condition
// RolledOut on the set (SetRolloutCondition): True when every member's
// rollout succeeded, False with ReasonRolloutProgressing while one goes on,
// or with the reason and message of a member's rollout that stopped.
//
// Status.status and status.compliant of the root, and PolicySet status, are
// pkg/hub/rootstatus's, which reads status.placement.
//
// The pure cores are ResolvePlacement (which clusters, which overrides,
// which exclusions),
// replica.Build and replica.CanonicalDependencies (pkg/replica: what a
// replica holds),
// ReplicaUpToDate (whether to write) and PropagatedCondition.
//
// # Hub templates
//
// After replica.Build, the hub templates ({{hub ... hub}}) of each replica
// are resolved per cluster by pkg/hubtemplates, whose doc gives OCM's
// semantics, the confinement of lookups, the watches and the encryption;
// its Cache runs with the manager and its watch events reconcile the root
// of the replica concerned. A template that fails is never half resolved:
// the replica's policy template stays as the root wrote it, with the error
// in the annotation hub-templates-error, and the agent reports it
// NonCompliant. The root's condition Propagated turns False with
// ReasonHubTemplateError, naming the clusters and errors (without the
// template), and a Warning event "Failed to resolve templates for cluster
// <cluster>: <error>" is recorded when a replica's error first appears. A
// failure of the API server (or of the key) leaves the replica as it was
// and is retried with backoff (PropagationFailed).
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
// controller reads from Policies. ManagedClusters are not cached (a
// cluster's namespace is its name); hub templates read them, and the
// objects they look up, through their own watches.
//
// Metrics: canopy_propagation_failures_total{namespace,policy},
// canopy_hub_template_resolutions_total{namespace,policy} (replicas
// resolved, not taken from memory), canopy_hub_template_failures{namespace,
// policy} (templates whose hub templates failed, per cluster, at the root's
// last reconcile; no series without) and
// canopy_propagator_reconcile_duration_seconds, beside controller-runtime's
// own per-controller metrics (controller="propagator").
package propagator
