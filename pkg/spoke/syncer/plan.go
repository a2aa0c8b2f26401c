package syncer

import (
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
	"github.com/canopy-policy/canopy/pkg/hierarchy"
)

// op is what an action does.
type op string

const (
	opCreate op = "create"
	opUpdate op = "update"
	opDelete op = "delete"
	// opConflict changes nothing: the object belongs to another manager.
	opConflict op = "conflict"
	// opHold is a deletion that is held, because the tree is invalid.
	opHold op = "hold"
)

// action is one step of a plan: what to do to an object, and why. For an
// update, object is the observed object with the declared content merged
// in, ready to be written in place.
type action struct {
	op     op
	object *unstructured.Unstructured
	reason string
	// declared says the object is declared (so it counts against InSync).
	declared bool
}

// changes reports whether the action writes.
func (a action) changes() bool { return a.op == opCreate || a.op == opUpdate || a.op == opDelete }

// objectKey identifies an object (hierarchy.ObjectKey, which the tree
// keys its objects by).
type objectKey = hierarchy.ObjectKey

func keyOf(u *unstructured.Unstructured) objectKey { return hierarchy.KeyOf(u) }

func compareKeys(a, b objectKey) int { return hierarchy.CompareKeys(a, b) }

// rules say what the planner may delete among observed objects that are
// not declared.
type rules struct {
	// policy is the planning policy's name (PolicyLabel value): undeclared
	// objects it applied earlier are deleted.
	policy string
	// strict are the kinds whose undeclared objects are all deleted, even
	// those made by hand (managedKinds, in the namespaces the policy manages).
	strict map[schema.GroupKind]bool
	// holdDeletes turns every deletion into opHold.
	holdDeletes bool
	// generator is "<policy>.<generator>" when planning a generator's
	// objects, "" when planning the declared tree: objects of the other
	// source of the same policy are conflicts.
	generator string
}

// plan compares the declared objects with the observed ones and returns
// what to do, sorted by object, each with its reason. It is pure: the
// controller applies the plan, inform mode reports it. Objects in reserved
// namespaces are never touched.
func plan(desired, observed []*unstructured.Unstructured, r rules) []action {
	seen := map[objectKey]*unstructured.Unstructured{}
	for _, o := range observed {
		if _, dup := seen[keyOf(o)]; !dup && !hierarchy.IsReserved(o.GetNamespace()) {
			seen[keyOf(o)] = o // Note: the first observation wins: a sweep's metadata-only copy comes last
		}
	}
	var out []action
	declared := map[objectKey]bool{}
	for _, d := range desired {
		key := keyOf(d)
		if hierarchy.IsReserved(key.Namespace) || declared[key] {
			continue
		}
		declared[key] = true
		if a, ok := planDeclared(d, seen[key], r); ok {
			out = append(out, a)
		}
	}
	for _, key := range slices.SortedFunc(maps.Keys(seen), compareKeys) {
		if !declared[key] {
			if a, ok := planUndeclared(seen[key], r); ok {
				out = append(out, a)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b action) int { return compareKeys(keyOf(a.object), keyOf(b.object)) })
	return out
}

// planDeclared is the first three rows of both guarantee tables
// (docs/api/hierarchy-v1alpha1.md, "Declared tree"): a
// declared object is created when missing and updated when different.
func planDeclared(d, o *unstructured.Unstructured, r rules) (action, bool) {
	if o == nil {
		return action{op: opCreate, object: d, reason: "declared but missing", declared: true}, true
	}
	if owner := foreignOwner(o, r); owner != "" {
		return action{op: opConflict, object: o, reason: "declared, but " + owner + "; left alone", declared: true}, true
	}
	if !o.GetDeletionTimestamp().IsZero() {
		return action{}, false // it is going; the next evaluation creates it again
	}
	if equivalent(d, o) {
		return action{}, false
	}
	return action{op: opUpdate, object: mergeInto(d, o), reason: "declared but different", declared: true}, true
}

// planUndeclared is the last two rows: an undeclared object is deleted
// when it is of a strict kind, or when this policy applied it; otherwise it
// is left alone.
func planUndeclared(o *unstructured.Unstructured, r rules) (action, bool) {
	ours := o.GetLabels()[hierarchyv1alpha1.PolicyLabel] == r.policy
	strict := r.strict[o.GroupVersionKind().GroupKind()]
	if (!ours && !strict) || !o.GetDeletionTimestamp().IsZero() {
		return action{}, false
	}
	reason := "no longer declared"
	if !ours {
		reason = "not declared, and its kind is managed"
	}
	if owner := foreignOwner(o, r); owner != "" {
		return action{op: opConflict, object: o, reason: reason + ", but " + owner + "; left alone"}, true
	}
	if r.holdDeletes {
		return action{op: opHold, object: o, reason: reason + "; deletion held while the tree is invalid"}, true
	}
	return action{op: opDelete, object: o, reason: reason}, true
}

// foreignOwner says who else manages o, or "" when nobody or this source
// does: another manager (app.kubernetes.io/managed-by), another
// HierarchyPolicy, the other source (tree or generator) of this one, or a
// controlling owner reference.
func foreignOwner(o *unstructured.Unstructured, r rules) string {
	labels := o.GetLabels()
	if m := labels[hierarchyv1alpha1.ManagedByLabel]; m != "" && m != hierarchyv1alpha1.ManagedByValue {
		return fmt.Sprintf("it is managed by %s", m)
	}
	if p := labels[hierarchyv1alpha1.PolicyLabel]; p != "" {
		gen := labels[hierarchyv1alpha1.GeneratedByLabel]
		switch {
		case p != r.policy:
			return fmt.Sprintf("it belongs to HierarchyPolicy %s", p)
		case gen != r.generator && gen != "":
			return fmt.Sprintf("it is generated by %s", gen)
		case gen != r.generator:
			return "it is declared by the tree"
		}
	}
	for _, ref := range o.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller {
			return fmt.Sprintf("it is controlled by %s %s", ref.Kind, ref.Name)
		}
	}
	return ""
}
