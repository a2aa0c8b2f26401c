// Package statussync is the only writer of Policy status on a managed
// cluster, and of the status of its hub replicas.
//
// Reconciler reconciles local Policies: it reads the compliance events
// (pkg/compliance) whose involvedObject carries the Policy's UID and writes
// status.details[] (one entry per template, history newest first, at most
// HistoryLimit entries, deduplicated by event) and status.compliant
// (NonCompliant > Pending > Compliant; empty while a template has not
// reported). The status.history of a template object that keeps one
// (historyKeeper: ConfigurationPolicy) joins that history, as
// OCM's framework addon merges it, so that it outlives the events
// (history.go). It needs only the managed cluster, so compliance keeps being
// recorded while the hub is unreachable.
//
// The agent's Recorder writes its events through Writer, which hands each
// one, as the API server stored it, to the Reconciler (handover.go): the
// Policy's status is written right after the evaluation that recorded the
// event, without waiting for the Event informer to show it, which saves a
// dependency link one round trip. The informer still delivers every event;
// the hand-over only makes one the API server has visible earlier.
//
// A stale event never wins: an event enters the history only if it counts
// for the template object that exists now (compliance.Counts), so a late
// report on a deleted, never-created or foreign object, or one that names
// no object while the template has none (a Pending template), is ignored
// and logged at V(4). Reconciler reads each template's object from the
// manager's cache, and from the API server when an event contradicts the
// cache, which may lag (templates.go). An entry stays in the history once
// it is there; should one slip in, templatesync records its report again.
//
// A local copy of a hub replica (specsync notes the replica's generation on
// it, pkg/replica) also gets status.evaluatedGeneration: the replica's
// generation once every template of the Policy's current generation has,
// as its newest event, a report on that generation (Evaluated: an
// evaluator's on the object templatesync wrote for it, or templatesync's
// own), and the condition Evaluated that says for which generation of the
// local Policy that was computed; it stays when the events expire.
//
// HubReconciler reconciles hub replicas: it copies status.compliant,
// status.details and status.evaluatedGeneration (EvaluatedGeneration: 0
// while the local one is about a previous spec) of the local Policy to the
// replica of the same name. Its
// state is the local status, so after a hub outage it sends the latest
// status, whose history holds every transition recorded meanwhile.
package statussync
