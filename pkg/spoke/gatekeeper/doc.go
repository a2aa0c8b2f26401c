// Package gatekeeper reports the compliance of the Gatekeeper templates of
// local Policies — constraints (constraints.gatekeeper.sh) and
// ConstraintTemplates (templates.gatekeeper.sh) — as OCM's framework addon
// does (its gatekeepersync for constraints, its templatesync for
// ConstraintTemplates). Gatekeeper evaluates them; this package reads the
// status Gatekeeper writes and records compliance events (pkg/compliance)
// on the parent Policy, which statussync turns into Policy status.
//
// It reconciles local Policies that hold a Gatekeeper template and writes
// nothing but events. templatesync writes the objects (cluster-scoped,
// labelled with the Policy's name and namespace, without an owner
// reference) and reports what keeps one from being written, Gatekeeper not
// installed among them (pkg/templatekinds, GatekeeperUnmappedMessage).
//
// A constraint's compliance comes from the results of Gatekeeper's audit
// in its status (ConstraintCompliance): status.totalViolations, the
// violations of status.violations listed in the message as OCM lists them
// (at most MaxListedViolations), OCM's NonCompliant for enforcementAction
// deny without Gatekeeper's validating webhook. Results that are not about
// the constraint's current spec — a Gatekeeper pod of status.byPod behind
// its generation, a status.auditTimestamp not after its last change
// (LastChange, from its managedFields) — or no results yet are Pending, not
// the old answer: what is reported is true of the spec that is there. A
// ConstraintTemplate's comes from status.created (TemplateCompliance).
//
// Events are about the object (its UID) and the version templatesync wrote
// (compliance.TemplateHashAnnotation), so statussync counts them for the
// object that exists now and tells the hub the current spec was evaluated.
// The Recorder writes one per change, not one per audit run: the messages
// carry no audit time. The objects, their kinds' CRDs and Gatekeeper's
// ValidatingWebhookConfiguration are watched through
// kubernetes-dependency-watches (pkg/depwatch), as OCM watches them: a new
// audit result reconciles its Policy at once, without polling.
package gatekeeper
