package syncer

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// Condition types of HierarchyPolicy.
const (
	// ConditionTreeValid is False when the declared tree has a cycle, a
	// missing parent, a duplicate object without a merge rule, a reserved
	// namespace or an undecodable resource. Every deletion is then held.
	ConditionTreeValid = "TreeValid"
	// ConditionInSync is True when the cluster matches the policy: nothing
	// to create, update or delete, and no conflict.
	ConditionInSync = "InSync"
)

// Condition reasons of HierarchyPolicy.
const (
	// ReasonValid: the tree has no problem.
	ReasonValid = "Valid"
	// ReasonInvalidTree: the tree has problems, listed in the message.
	ReasonInvalidTree = "InvalidTree"
	// ReasonInSync: every declared object is as declared.
	ReasonInSync = "InSync"
	// ReasonRemediated: the syncer changed the cluster to match.
	ReasonRemediated = "Remediated"
	// ReasonPlanned: under inform, the plan is not empty.
	ReasonPlanned = "ChangesPlanned"
	// ReasonConflicts: some objects belong to another manager.
	ReasonConflicts = "Conflicts"
	// ReasonFailed: some writes failed; they are retried.
	ReasonFailed = "WriteFailed"
)

// maxListed bounds relatedObjects and status.namespaces.
const maxListed = 50

// outcome is what evaluating one scope (a namespace, or "" for the cluster
// scope) found and did.
type outcome struct {
	namespace string
	declared  int
	actions   []action
	// applied is true when the plan's changes were written (enforce).
	applied bool
	// failed are the reads and writes that failed.
	failed failures
	// written is the resourceVersion each create and update returned, by
	// UID.
	written map[types.UID]string
}

// open returns the actions of o still to be done: all of them under
// inform; conflicts, holds and failed writes under enforce.
func (o outcome) open() []action {
	var out []action
	for i, a := range o.actions {
		if !o.applied || !a.changes() || o.failed.write(i) != nil {
			out = append(out, a)
		}
	}
	return out
}

// evaluatedStatus computes the status of p from the evaluation's outcomes.
// It is pure.
func evaluatedStatus(p *hierarchyv1alpha1.HierarchyPolicy, t *tree, outcomes []outcome, now time.Time) hierarchyv1alpha1.HierarchyPolicyStatus {
	st := p.Status.DeepCopy()
	st.ManagedNamespaces = t.Namespaces()
	st.Namespaces, st.RelatedObjects = nil, nil
	var open, conflicts, failed, remediated int
	var firstErr string
	perNamespace := map[string]hierarchyv1alpha1.NamespaceCounts{}
	for _, o := range outcomes {
		c := counts(o)
		open += int(c.Planned)
		conflicts += int(c.Conflicts)
		failed += o.failed.count()
		if firstErr == "" {
			firstErr = firstFailure(o)
		}
		remediated += countApplied(o)
		if o.namespace != "" { // the tree and generators may both write in one namespace
			sum := perNamespace[o.namespace]
			sum.Name = o.namespace
			sum.Declared, sum.InSync = sum.Declared+c.Declared, sum.InSync+c.InSync
			sum.Planned, sum.Conflicts = sum.Planned+c.Planned, sum.Conflicts+c.Conflicts
			perNamespace[o.namespace] = sum
		}
		st.RelatedObjects = appendRelated(st.RelatedObjects, o)
	}
	for _, name := range first(slices.Sorted(maps.Keys(perNamespace)), maxListed) {
		if c, ok := perNamespace[name]; ok {
			st.Namespaces = append(st.Namespaces, c)
		}
	}
	setTreeValid(st, p.Generation, t.Problems)
	state, reason, msg := summarize(t.Valid(), open, conflicts, failed, remediated)
	if reason == ReasonFailed {
		msg += " First: " + firstErr
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: ConditionInSync, Status: boolStatus(state == policyv1.Compliant),
		ObservedGeneration: p.Generation, Reason: reason, Message: msg})
	st.ComplianceState = state
	st.LastEvaluated = &metav1.Time{Time: now.Truncate(time.Second)}
	st.LastEvaluatedGeneration = p.Generation
	return *st
}

// counts returns the per-namespace counts of o.
func counts(o outcome) hierarchyv1alpha1.NamespaceCounts {
	c := hierarchyv1alpha1.NamespaceCounts{Name: o.namespace, Declared: clamp32(o.declared)}
	notInSync := 0
	for _, a := range o.open() {
		if a.declared {
			notInSync++
		}
		switch a.op {
		case opConflict:
			c.Conflicts++
		default:
			c.Planned++
		}
	}
	c.InSync = clamp32(max(o.declared-notInSync, 0))
	return c
}

func countApplied(o outcome) int {
	if !o.applied {
		return 0
	}
	n := 0
	for i, a := range o.actions {
		if a.changes() && o.failed.write(i) == nil {
			n++
		}
	}
	return n
}

// appendRelated lists o's actions: those still open as NonCompliant, those
// applied as Compliant.
func appendRelated(list []policyv1.RelatedObject, o outcome) []policyv1.RelatedObject {
	open := map[*action]bool{}
	for i := range o.actions {
		a := &o.actions[i]
		open[a] = !o.applied || !a.changes() || o.failed.write(i) != nil
	}
	for i := range o.actions {
		if len(list) >= maxListed {
			break
		}
		a := o.actions[i]
		rel := policyv1.RelatedObject{
			Object: policyv1.ObjectResource{APIVersion: a.object.GetAPIVersion(), Kind: a.object.GetKind(),
				Metadata: policyv1.ObjectMetadata{Name: a.object.GetName(), Namespace: a.object.GetNamespace()}},
			Compliant: string(policyv1.Compliant),
			Reason:    describe(a, o.applied, o.failed.write(i)),
		}
		if open[&o.actions[i]] {
			rel.Compliant = string(policyv1.NonCompliant)
		}
		list = append(list, rel)
	}
	return list
}

// describe says in words what was, or would be, done.
func describe(a action, applied bool, err error) string {
	past := map[op]string{opCreate: "created", opUpdate: "updated", opDelete: "deleted"}
	switch {
	case !a.changes():
		return string(a.op) + ": " + a.reason
	case err != nil:
		return fmt.Sprintf("%s failed: %s: %v", a.op, a.reason, err)
	case applied:
		return past[a.op] + ": " + a.reason
	}
	return "would " + string(a.op) + ": " + a.reason
}

func setTreeValid(st *hierarchyv1alpha1.HierarchyPolicyStatus, gen int64, problems []string) {
	c := metav1.Condition{Type: ConditionTreeValid, Status: metav1.ConditionTrue, ObservedGeneration: gen,
		Reason: ReasonValid, Message: "The declared tree is valid."}
	if len(problems) > 0 {
		c.Status, c.Reason = metav1.ConditionFalse, ReasonInvalidTree
		c.Message = "Every deletion is held until the tree is fixed: " + strings.Join(first(problems, 5), "; ")
	}
	meta.SetStatusCondition(&st.Conditions, c)
}

// summarize returns the compliance state and the InSync reason and message.
func summarize(valid bool, open, conflicts, failed, remediated int) (policyv1.ComplianceState, string, string) {
	switch {
	case !valid:
		return policyv1.NonCompliant, ReasonInvalidTree, "The tree is invalid; see the TreeValid condition."
	case failed > 0:
		return policyv1.NonCompliant, ReasonFailed, fmt.Sprintf("%d reads or writes failed and are retried.", failed)
	case conflicts > 0:
		return policyv1.NonCompliant, ReasonConflicts, fmt.Sprintf(
			"%d objects belong to another manager and are left alone; remove them or the declarations.", conflicts)
	case open > 0:
		return policyv1.NonCompliant, ReasonPlanned, fmt.Sprintf(
			"%d changes are planned; set remediationAction to enforce to apply them.", open)
	case remediated > 0:
		return policyv1.Compliant, ReasonRemediated, fmt.Sprintf("%d changes were applied.", remediated)
	}
	return policyv1.Compliant, ReasonInSync, "Every declared object is as declared."
}

// eventMessage is the compliance event message of st: the InSync message,
// and the first related objects still open.
func eventMessage(st hierarchyv1alpha1.HierarchyPolicyStatus) string {
	c := meta.FindStatusCondition(st.Conditions, ConditionInSync)
	if c == nil {
		return ""
	}
	kind := "notification"
	if st.ComplianceState != policyv1.Compliant {
		kind = "violation"
	}
	parts := []string{kind + " - " + strings.TrimSuffix(c.Message, ".")}
	if tv := meta.FindStatusCondition(st.Conditions, ConditionTreeValid); tv != nil && tv.Status == metav1.ConditionFalse {
		parts = append(parts, strings.TrimSuffix(tv.Message, "."))
	}
	for _, rel := range st.RelatedObjects {
		if rel.Compliant == string(policyv1.NonCompliant) && len(parts) < 6 {
			parts = append(parts, fmt.Sprintf("%s %s: %s", rel.Object.Kind, objectName(rel.Object.Metadata), rel.Reason))
		}
	}
	return strings.Join(parts, "; ")
}

func objectName(m policyv1.ObjectMetadata) string {
	if m.Namespace == "" {
		return m.Name
	}
	return m.Namespace + "/" + m.Name
}

func first(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("and %d more", len(s)-n))
	}
	return s
}

func boolStatus(b bool) metav1.ConditionStatus {
	if b {
		return metav1.ConditionTrue
	}
	return metav1.ConditionFalse
}

// clamp32 converts a count to int32, saturating.
func clamp32(n int) int32 {
	if n > math.MaxInt32 {
		return math.MaxInt32
	}
	return int32(n) //nolint:gosec // bounded above
}

// firstFailure returns the message of o's first failure, "" when none.
func firstFailure(o outcome) string {
	if all := o.failed.all(); len(all) > 0 {
		return all[0].Error()
	}
	return ""
}
