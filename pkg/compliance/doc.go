// Package compliance owns the compliance event: the contract between the
// evaluators of policy templates on a managed cluster (configpolicy, the
// hierarchical syncer) and templatesync on one side, and statussync on the
// other (docs/api.md, "Compliance events").
//
// A compliance event is a core/v1 Event on the template's parent Policy
// (involvedObject carries the Policy's UID) with
//
//	reason:  policy: <template namespace>/<template name>
//	message: Compliant; ... | NonCompliant; ... | Pending; ...
//	type:    Normal for Compliant, Warning otherwise
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
//		Message:  "Dependencies were not satisfied: 1 are still pending (Policy a)",
//	}, compliance.RecordOptions{})
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
