// Package syncer is Canopy's hierarchical namespace syncer (docs/api/hierarchy-v1alpha1.md,
// "HierarchyPolicy"):
// it makes namespaces and the objects in them match the declared trees of
// HierarchyPolicies (hierarchy.canopy.io/v1alpha1).
//
// Reconciler reconciles HierarchyPolicy and is the only writer of its
// status:
// compliant, the TreeValid and InSync conditions, managedNamespaces,
// namespaces (per-namespace counts: declared, inSync, planned, conflicts),
// relatedObjects (the first actions planned or applied, with their reason)
// and lastEvaluated/lastEvaluatedGeneration. It records compliance events on
// the parent Policy through pkg/compliance, as ConfigurationPolicy does; a
// HierarchyPolicy without a parent only gets its status.
//
// One engine, one planner. plan(desired, observed, rules) (plan.go) is a
// pure function returning actions {op, object, reason}; the controller
// applies them under enforce, and under inform reports them as NonCompliant
// without writing. The planner implements both guarantee tables of
// docs/api/hierarchy-v1alpha1.md ("Declared tree"):
//
//   - declared and missing → create; declared and different → update in
//     place (equivalent, equal.go, ignores fields the API server fills in);
//   - cluster-scoped, never declared → untouched; applied earlier by this
//     policy and no longer declared → deleted;
//   - namespace-scoped, of a managedKind, in a namespace of the tree, not
//     declared → deleted, even if made by hand.
//
// "Applied earlier" is read from the cluster, not from memory: every object
// the syncer writes carries app.kubernetes.io/managed-by=canopy, the label
// hierarchy.canopy.io/policy=<name> and the provenance annotation
// hierarchy.canopy.io/source; each policy evaluation sweeps every listable
// kind for its label (owned.go), so removals are found across restarts.
// Namespaces carry the policy label only when the syncer created them, so
// a node removed from the tree deletes its namespace only then.
//
// The tree (tree.go) is built and validated purely: cycles, missing parents,
// reserved namespaces (kube-system, kube-public, kube-node-lease) and the
// same kind and name declared at two levels of one ancestry without a merge
// rule (merge: Minimum for ResourceQuota keeps the lowest hard limit per
// resource) make it invalid; then every deletion is held (op "hold") and the
// TreeValid condition says why, while creations and updates in the valid
// parts go on. Objects belonging to another manager (another managed-by, or
// another HierarchyPolicy, or a controlling owner) are reported as conflicts,
// never overwritten or deleted.
//
// Level-based engine (docs/architecture.md, "Inside the hierarchical
// syncer"): two controllers, each with a typed work queue of its own. The
// "syncer" controller's keys are HierarchyPolicies: a policy key applies the
// policy's cluster-scoped objects and all its namespaces, sweeps, and writes
// the status (Reconcile). The "syncer-namespace" controller's keys are
// namespaces (namespaceRequest, namespace.go): a namespace key applies, in
// that namespace, every enforced policy whose tree has it, then live
// propagation. A policy's change fans out to the namespace keys of the
// subtrees of the nodes that changed (affectedNamespaces); a change to a
// Namespace or to an object of a watched kind maps back to its namespace
// key and to the policies concerned. Bursts coalesce in each work queue.
// Watches on declared and managed kinds are started, for both controllers,
// the first time a policy names them. A plan starts from objects read from
// the API server, never from a possibly stale cache; the outcome of a
// policy's sync of a namespace is shared by both controllers until a watch
// event shows the namespace changed (synced.go), so a namespace is read
// once per change. The sweep lists the watched kinds from their caches.
//
// Generators (generate.go): spec.generators create an object,
// from inline data or cloned from an existing object, in every namespace
// the selector matches — existing ones as well as new ones. Each object is
// labelled hierarchy.canopy.io/generated-by=<policy>.<generator>. With
// synchronize: true it is kept identical to its source and deleted when
// the namespace stops matching or the generator is removed; otherwise it is
// only created where missing. A clone source that does not exist holds the
// generator's deletions. The planner is the same; generated objects and
// tree objects of one policy are conflicts to each other.
//
// Live propagation (propagate.go): run on each namespace key.
// A namespace labelled hierarchy.canopy.io/parent=<ns> (a sub-namespace) or
// hierarchy.canopy.io/template=<ns> copies, from that namespace, the
// objects of the kinds in any HierarchyPolicy's spec.propagation.kinds that
// are annotated hierarchy.canopy.io/propagate: create (only where missing)
// or update (kept identical; deleted when the source goes or the namespace
// moves or leaves the tree), with hierarchy.canopy.io/from naming the
// source namespace; copies propagate further down. Namespace labels and
// annotations whose keys match spec.propagation.labelKeys/annotationKeys
// are copied down too. Because the rule is level-based and every namespace
// is reconciled when the agent starts, copies orphaned while it was down
// are deleted then. An object whose controller (owner reference) carries
// hierarchy.canopy.io/propagate-generated is annotated to propagate with
// that mode, so that what a controller generates propagates too.
//
// SubNamespaceReconciler (subnamespace.go), registered by Reconciler, is the
// only writer of SubNamespace status (the Ready condition, namespace) and
// of its finalizer: a SubNamespace in a root (hierarchy.canopy.io/type=root)
// or sub-namespace creates the child namespace, labelled with its parent;
// deleting the SubNamespace deletes the child only while the child's parent
// label still names the SubNamespace's namespace.
//
// Not done: the parent Policy's remediationAction is expected to be written into the
// template by templatesync, not read here; a deleted HierarchyPolicy leaves
// what it applied (like pruneObjectBehavior None).
package syncer
