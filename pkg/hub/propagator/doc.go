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
//     decisions, a PlacementRule, a hub template that fails) is explained
//     in the condition's message;
//   - the Secret policy-encryption-key of a cluster namespace, when hub
//     templates encrypt for a cluster that has none.
//
// Status.status and status.compliant of the root, and PolicySet status, are
// pkg/hub/rootstatus's, which reads status.placement.
//
// The pure cores are ResolvePlacement (which clusters, which overrides),
// BuildReplica and CanonicalDependencies (what a replica holds),
// ReplicaUpToDate (whether to write) and PropagatedCondition.
//
// # Hub templates
//
// After BuildReplica, a separate step resolves the hub templates
// ({{hub ... hub}}) of each policy template of the replica, per cluster,
// with OCM's library (github.com/stolostron/go-template-utils) and OCM's
// semantics: the context .ManagedClusterName, .ManagedClusterLabels (read
// from the cluster's ManagedCluster by a context transformer, only when a
// template mentions it) and .PolicyMetadata (name, namespace, labels and
// annotations of the root); every function of the library (fromSecret,
// fromConfigMap, copySecretData, copyConfigMapData, lookup, protect, the
// sprig subset...). The annotation disable-templates=true on the root
// turns this off; trigger-update is never copied to replicas.
//
// Lookups are confined as OCM confines them: to the root's namespace, and
// of cluster-scoped objects to the cluster's own ManagedCluster; a lookup
// elsewhere fails, it is never escalated. When
// spec.hubTemplateOptions.serviceAccountName names a ServiceAccount of the
// root's namespace, lookups instead use its permissions alone: its
// templates are resolved by a resolver whose DynamicWatcher authenticates
// with a token of that ServiceAccount (TokenRequest, renewed in memory
// before it expires). That resolver starts with the first replica that
// uses it and stops with the last. A missing ServiceAccount is OCM's error
// "the service account in hubTemplateOptions.serviceAccountName
// (<namespace>/<name>) does not exist", resolved again when it appears.
//
// Every object a replica's templates read is watched
// (kubernetes-dependency-watches, one query batch per resolution, so what
// they no longer read is no longer watched). An event names the replica:
// its remembered resolution is forgotten and its root reconciled, which
// resolves that replica alone again; the others of the root, and the
// replicas of other roots, are taken from memory. A resolution is also
// redone when the root's generation, labels or annotations change (so
// changing trigger-update resolves all its replicas again). Memory is lost
// on restart: the first reconcile of each root resolves its replicas anew,
// to the same result, so a steady hub still writes nothing. The replicas of
// a deleted root or a deselected cluster stop their watches.
//
// protect, fromSecret and copySecretData encrypt with OCM's scheme
// (AES-256-CBC): a key per cluster in Secret policy-encryption-key (field
// "key") of the cluster namespace, created by the hub when missing (with
// OCM's backup label and last-rotated annotation) and watched, and an IV per
// replica in the annotation encryption-iv, on the replica and on each
// policy template that encrypts; the IV is kept across resolutions, so
// unchanged inputs give unchanged values. Encrypted values read
// "$ocm_encrypted:<base64>"; the agent decrypts them with its copy of the
// key. Any action that mentions fromSecret, copySecretData or protect
// encrypts (OCM only looks at their usual positions), so a Secret's value
// read by these functions never sits in a replica in clear text. Note: as
// in OCM, lookup of a Secret returns it as it is; use fromSecret.
//
// A template that fails (syntax, a missing object, a forbidden lookup, a
// missing ServiceAccount) is never half resolved: the replica's policy
// template stays as the root wrote it, with the error in the annotation
// hub-templates-error (OCM's message, which quotes the template as
// written), and the agent reports it NonCompliant. The root's condition
// Propagated turns False with ReasonHubTemplateError, naming the clusters
// and errors (without the template), and a Warning event "Failed to
// resolve templates for cluster <cluster>: <error>" is recorded when a
// replica's error first appears. A missing object is resolved again when
// it appears (it is watched); a permission the ServiceAccount lacks is
// retried with backoff; a failure of the API server (or of the key) leaves
// the replica as it was and is retried with backoff (PropagationFailed).
// An error raised after a Secret was read has what the failing function
// said withheld, as it may quote the value; the library's own log, which
// prints templates and values, is silenced.
//
// ResolveHubTemplates does the same for one root and cluster without the
// controller (no cache, no watch, no write), for kubectl canopy plan.
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
// resolved, not taken from memory) and
// canopy_propagator_reconcile_duration_seconds, beside controller-runtime's
// own per-controller metrics (controller="propagator").
package propagator
