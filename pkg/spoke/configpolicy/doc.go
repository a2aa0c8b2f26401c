// Package configpolicy evaluates ConfigurationPolicy objects on the managed
// cluster, with the semantics of OCM's config-policy-controller, so that
// existing policies apply unchanged.
//
// It reconciles ConfigurationPolicy (policy.open-cluster-management.io/v1)
// and is the only writer of its status: compliant, compliancyDetails (one
// entry per object template, with OCM's messages such as "configmaps
// [app-config] found but not as specified in namespace default"),
// relatedObjects (with properties.createdByPolicy, uid, diff and
// matchesAfterDryRun), lastEvaluated/lastEvaluatedGeneration and history
// (the last 10 compliance messages sent to the parent, newest first, with
// the events' times; history.go). It adds and removes the finalizer
// PruneFinalizer, and records compliance events on the parent Policy
// through pkg/compliance — one per change, not one per evaluation — with
// messages capped at 4096 bytes ("...[truncated]"), as OCM caps them.
//
// Each object template is compared with the objects on the cluster by a
// pure function (compareObject, compare.go, on pkg/compare's Matches and
// Merge under compare.Subset or compare.Exact): musthave is a subset match in
// which lists match by content, not position; mustonlyhave is an exact
// match; mustnothave is violated by an object matching the template (with
// only a kind and name, by any object of that name). Under enforce the
// object is created, updated (to Merge's result) or deleted; under inform
// nothing is written, but a server-side dry-run update tells apart a real
// difference from fields the API server defaults.
//
// Kinds are resolved through discovery; a kind that is not served makes
// the template NonCompliant and is looked up again when its CRD appears.
// Namespaced templates without a namespace apply in every namespace the
// policy's namespaceSelector chooses (namespaces.go); terminating
// namespaces too unless terminatingInclusion is Never.
//
// evaluationInterval "watch" (the default) reads objects through
// github.com/stolostron/kubernetes-dependency-watches, which watches every
// object an evaluation read and re-evaluates the policy when one changes; a
// duration re-evaluates periodically; "never" stops once in that state
// (interval.go). pkg/depwatch runs the watcher: it stops only once no
// evaluation is in flight.
//
// Templates that cannot be evaluated — an object definition that is not a
// Kubernetes object, a selector that does not parse, an unknown kind, a
// missing namespace, an object the API server refuses — make the policy
// NonCompliant with a message saying why. Refusals a retry cannot fix wait
// for a change; other failures are retried with a bounded backoff.
//
// recordDiff InStatus puts a unified diff (YAML, OCM's format: 5 lines of
// context, at most 50 lines) in relatedObjects[].properties.diff; Log logs
// it; None records nothing. Unset, it is InStatus, except for ConfigMap,
// Secret, OAuthAccessToken, OAuthAuthorizeTokens and Route and for
// templates that read Secrets or encrypted values, whose diff is OCM's
// notice that it is redacted. A Secret's diff is never recorded, whatever
// recordDiff says (diff.go).
//
// Managed-cluster templates (resolve*.go, decrypt.go): Go templates ({{ }})
// anywhere in an object definition — values, names, namespaces — and
// object-templates-raw (a template yielding the YAML of the object
// templates) are resolved at each evaluation with
// github.com/stolostron/go-template-utils, OCM's library and functions
// (fromSecret, fromConfigMap, fromClusterClaim, lookup, copySecretData,
// skipObject, ...). Where a namespaceSelector or objectSelector selects
// the objects, a definition using .Object, .ObjectName or .ObjectNamespace
// is resolved once per object. A watched policy resolves through the
// dynamic watcher, in its own query batch, so a change to anything its
// templates read re-evaluates it; others read from the API server. Values
// the hub encrypted ("$ocm_encrypted:") are decrypted with the key Secret
// policy-encryption-key of the policy's namespace and the IV annotation.
// The annotation policy.open-cluster-management.io/disable-templates:
// "true" leaves templates as literal text. A template that does not
// resolve makes its object template NonCompliant (reason "Error processing
// template", the error with the template as written), and nothing of it is
// written. Values read from Secrets or decrypted never reach a message, a
// diff (redacted), a log line or an event: messages of such objects mask
// the resolved values.
//
// objectSelector, metadataComplianceType, recreateOption and customMessage
// are OCM's; an enforced policy prunes the objects it no longer lists
// (prune.go).
package configpolicy
