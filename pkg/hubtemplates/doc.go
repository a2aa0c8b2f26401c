// Package hubtemplates resolves the hub templates ({{hub ... hub}}) of the
// policy templates of a replica, per cluster, with OCM's library
// (github.com/stolostron/go-template-utils) and OCM's semantics: the context
// .ManagedClusterName, .ManagedClusterLabels (read from the cluster's
// ManagedCluster by a context transformer, only when a template mentions it)
// and .PolicyMetadata (name, namespace, labels and annotations of the root);
// every function of the library (fromSecret, fromConfigMap, copySecretData,
// copyConfigMapData, lookup, protect, the sprig subset...). The annotation
// disable-templates=true on the root turns this off; trigger-update is never
// copied to replicas.
//
// Lookups are confined as OCM confines them: to the root's namespace, and of
// cluster-scoped objects to the cluster's own ManagedCluster; a lookup
// elsewhere fails, it is never escalated. When
// spec.hubTemplateOptions.serviceAccountName names a ServiceAccount of the
// root's namespace, lookups instead use its permissions alone: its templates
// are resolved by a resolver whose DynamicWatcher authenticates with a token
// of that ServiceAccount (TokenRequest, renewed in memory before it
// expires). That resolver starts with the first replica that uses it and
// stops with the last. A missing ServiceAccount is OCM's error "the service
// account in hubTemplateOptions.serviceAccountName (<namespace>/<name>) does
// not exist", resolved again when it appears.
//
// Every object a replica's templates read is watched
// (kubernetes-dependency-watches, one query batch per resolution, so what
// they no longer read is no longer watched). An event names the replica: its
// remembered resolution is forgotten and its root reconciled, which resolves
// that replica alone again; the others of the root, and the replicas of
// other roots, are taken from memory. A resolution is also redone when the
// root's generation, labels or annotations change (so changing
// trigger-update resolves all its replicas again). Memory is lost on
// restart: the first reconcile of each root resolves its replicas anew, to
// the same result, so a steady hub still writes nothing. The replicas of a
// deleted root or a deselected cluster stop their watches.
//
// protect, fromSecret and copySecretData encrypt with OCM's scheme
// (AES-256-CBC): a key per cluster in Secret policy-encryption-key (field
// "key") of the cluster namespace, created by the hub when missing (with
// OCM's backup label and last-rotated annotation) and watched, and an IV per
// replica in the annotation encryption-iv, on the replica and on each policy
// template that encrypts; the IV is kept across resolutions, so unchanged
// inputs give unchanged values. Encrypted values read
// "$ocm_encrypted:<base64>"; the agent decrypts them with its copy of the
// key. Any action that mentions fromSecret, copySecretData or protect
// encrypts (OCM only looks at their usual positions), so a Secret's value
// read by these functions never sits in a replica in clear text. lookup
// returns a Secret as it is, so a template whose result the library marks
// as having read a Secret (HasSensitiveData) fails, with an error that says
// to use fromSecret, copySecretData or protect, when it does not encrypt at
// all, or when a value of a Secret its replica read shows in clear in the
// result (checkSensitive); a lookup piped into protect is encrypted like
// any other value. OCM writes such a lookup in clear; Canopy refuses it, so
// that what a hub template reads from a Secret is never written to the
// replica in clear text.
//
// A template that fails (syntax, a missing object, a forbidden lookup, a
// missing ServiceAccount) is never half resolved: the replica's policy
// template stays as the root wrote it, with the error in the annotation
// hub-templates-error (OCM's message, which quotes the template as written),
// and the agent reports it NonCompliant; Result.Failures gives each error
// with and without the template. A missing object is resolved again when it
// appears (it is watched); a permission the ServiceAccount lacks is retried
// with backoff; a failure of the API server (or of the key) leaves the
// replica as it was and is retried with backoff (Result.Hold). An error
// raised after a Secret was read has what the failing function said
// withheld, as it may quote the value; the library's own log, which prints
// templates and values, is silenced.
//
// The propagator resolves through a Cache, which it runs with its manager:
// Cache.Resolve per replica, Cache.Retain for the clusters still selected,
// and Options.Changed to reconcile the root of a replica whose templates
// read an object that changed. ResolveReplica does the same for one root and
// cluster without a Cache (no watch, no write), for kubectl canopy plan.
// This package has no controller and no metrics: the propagator counts what
// Options.Resolved and Options.ServiceAccountResolver tell it.
package hubtemplates
