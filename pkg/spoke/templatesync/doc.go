// Package templatesync creates the policy templates of each local Policy on
// a managed cluster, in dependency order (docs/api/v1.md, "Dependencies and
// the Pending state").
//
// It reconciles local Policies. For each entry of spec.policy-templates it
// writes one object in the Policy's namespace (the cluster namespace), with
// an owner reference to the Policy and the label
// policy.open-cluster-management.io/policy=<policy name>, when every
// dependency of the template (spec.dependencies ∪ extraDependencies) is
// met; otherwise it deletes the object if it exists and records a Pending
// compliance event (Compliant with ignorePending). Dependencies on the same
// namespace's Policies and templates that form a cycle are reported as
// NonCompliant with the cycle, on every policy of the cycle.
//
// A template whose hub templates failed (the hub set
// policy.open-cluster-management.io/hub-templates-error on its
// objectDefinition), or that still holds "{{hub" (written on the managed
// cluster, where nothing resolves hub templates; UnresolvedHubTemplates)
// unless templates are disabled, is never written: once its dependencies
// are met (Pending comes first, as in OCM), its object is deleted if it
// exists — a ConfigurationPolicy first set to pruneObjectBehavior None, so
// that a hub error prunes nothing — and the template is reported
// NonCompliant with "template-error; <error>". It comes back when the error
// goes. Other annotations of the objectDefinition, the encryption IV among
// them, reach the object unchanged.
//
// A template whose kind has no CRD labelled
// policy.open-cluster-management.io/policy-type=template, or whose version
// that CRD does not serve, is never written either: it is reported
// NonCompliant with a message naming the kind and saying that no
// controller on this cluster evaluates it, in OCM's words
// (UnevaluatedMessage; pkg/templatekinds lists the kinds the agent
// evaluates, which `kubectl canopy vet` warns about too).
//
// Template objects are written with strict field validation, as OCM's
// framework-addon writes them since v0.17.0: a template with a field its
// kind's schema does not know (a typo, or a field put at the wrong level,
// as in the policy-collection's sample-network-policy-99) is neither
// created nor updated, and is reported NonCompliant in OCM's words,
// "template-error; Failed to create policy template: <API server error>"
// ("Failed to update policy template <name>: ..." for an existing object),
// the API server's error naming each unknown field (refusedMessage).
//
// Gatekeeper's kinds (a ConstraintTemplate, a constraint of a kind one has
// made) are template kinds without a labelled CRD, as in OCM's framework
// addon: they are written when Gatekeeper is installed, cluster-scoped,
// without an owner reference and with the Policy's namespace in the
// cluster-namespace label, which says whose they are; the Policy's
// remediationAction becomes a constraint's enforcementAction (warn,
// deny). Where Gatekeeper is not installed they are reported NonCompliant
// in OCM's words, "Mapping not found, check if Gatekeeper is installed: ..."
// (pkg/templatekinds). No garbage collector deletes them with their Policy:
// templatesync prunes them when it sees the Policy go, and, at start, those
// of Policies deleted while the agent was down (orphans.go).
// pkg/spoke/gatekeeper reports their compliance.
//
// Every template object carries the Policy's metadata.generation
// (replica.PolicyGenerationAnnotation), within the hash the evaluators
// report as the version they evaluated, and templatesync's own events carry
// that generation as their version (replica.TemplateSyncVersion): every
// change of the Policy, also one that reaches no template's content, is
// evaluated and reported again, so that statussync can tell the hub which
// generation was evaluated.
//
// It is the only writer of policy template objects and writes no status: it
// reports through compliance events (pkg/compliance), which statussync turns
// into Policy status. Its events reference the template by name without a
// UID (compliance.TemplateRef): they are about a template that has no
// object of its own, and statussync counts them whatever object exists,
// while it ignores an evaluator's report on an object that is gone.
//
// What it reports is recomputed on every reconcile, not trusted to the
// Recorder's memory: when the Policy's status shows something else for a
// template it reports on (a stale event that slipped in, a status written
// by an older agent), newer than its last event, it records again
// (RecordOptions.Visible). A change of a template's compliance in status
// is the one status change that reconciles the Policy; so does a restart,
// and the hub replica, a copy of the local status, follows. Dependencies and the templates themselves are watched,
// so a change of a dependency re-evaluates its dependants at once, without
// polling: the cluster namespace's Policies and ConfigurationPolicies
// through the manager's informers and an index of Policies by what they
// depend on (local.go), any other kind with
// github.com/stolostron/kubernetes-dependency-watches, run by pkg/depwatch.
// A template object is rewritten only when it differs from the desired one
// (upToDate, apply.go, with pkg/compare).
//
// The pure cores are Evaluate (dependencies), PendingMessage and Plan;
// which object a dependency names and the cycles of the namespace's graph
// are pkg/depgraph's, and the text of the messages pkg/compliance's.
package templatesync
