// Package compliance owns the compliance event: the contract between the
// evaluators of policy templates on a managed cluster (configpolicy, the
// hierarchical syncer) and templatesync on one side, and statussync on the
// other (docs/api/v1.md, "Compliance events").
//
// A compliance event is a core/v1 Event on the template's parent Policy
// (involvedObject carries the Policy's UID) with
//
//	reason:  policy: <template namespace>/<template name>
//	message: Compliant; ... | NonCompliant; ... | Pending; ...
//	type:    Normal for Compliant, Warning otherwise
//	related: the template object (see below)
//
// exactly as OCM's policy framework writes it, so OCM tooling reads it too.
//
// Compliance is the wire content; Reason, Message and Type format it and
// Parse reads it back (Parse(NewEvent(p, c)) returns c). Recorder writes the
// events and records one per change of a template's compliance, not one per
// evaluation: see Recorder.Record for the rule. Any component that reports a
// template's compliance uses a Recorder:
//
//	parent, err := compliance.ParentOf(ctx, reader, template) // owner reference or policy label
//	...
//	_, err = recorder.Record(ctx, *parent, compliance.Compliance{
//		Template: client.ObjectKeyFromObject(template),
//		State:    policyv1.Pending,
//		Message:  "Dependencies were not satisfied: 1 is still pending (Policy a)",
//	}, compliance.RecordOptions{Related: compliance.TemplateRef(gvk, ns, name)})
//
// Which events count. Events outlive what they report: an evaluator's
// report can arrive after templatesync deleted the object it evaluated, and
// anything with the right reason can write one. So an event counts for its
// template's compliance only if it is about the template object that exists
// now (Counts): an evaluator's event references the object it evaluated,
// with its UID, and counts while that object is the current one;
// templatesync's events (the template waits, is on a cycle, is invalid, or
// its hub templates failed: there is no object of its own) reference the
// template by name without a UID (TemplateRef) and always count; an event
// without a related object counts only while a template object exists.
// statussync applies the rule; the Recorder, after a restart, goes on from
// the last event that counts for the object it reports on.
//
// The Recorder's memory is not the truth either: a Recorder that remembers
// having recorded c stays silent, but what users see is the Policy's status.
// A caller that knows the status (templatesync) passes its newest entry as
// RecordOptions.Visible, and c is recorded again when the status shows
// something else, newer than the last event: the status follows what the
// caller observes now, also after a restart and on the hub, which copies it.
//
// It also owns what several layers read in those events: the messages of a
// template held back by its dependencies, PendingMessage and CycleMessage
// (written by templatesync), with their parsers ParsePending and
// ParseCycle (used by pkg/report); and Aggregate, the one rule that
// combines compliances (a replica's templates, a root's clusters, a
// PolicySet's members).
//
// This package writes nothing but Events, and reads Policies (to find a
// parent's UID) and Events (to learn, after a restart, what was recorded).
package compliance
