package evaluator

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/canopy-policy/canopy/pkg/compliance"
)

// Triggers lets through the changes of a policy that call for an
// evaluation: its spec (generation), deletion, finalizers, labels, owners
// (which name the parent Policy), the version templatesync wrote (a
// template change that leaves the spec as it was is still reported on:
// compliance.RecordOptions.Version), and a compliance state emptied by
// someone else (complianceOf reads it). Status updates, the evaluator's own
// included, do not.
func Triggers[T Policy[T]](complianceOf func(T) string) predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld, e.ObjectNew
		if o.GetGeneration() != n.GetGeneration() ||
			!n.GetDeletionTimestamp().Equal(o.GetDeletionTimestamp()) ||
			!slices.Equal(o.GetFinalizers(), n.GetFinalizers()) ||
			!maps.Equal(o.GetLabels(), n.GetLabels()) ||
			o.GetAnnotations()[compliance.TemplateHashAnnotation] != n.GetAnnotations()[compliance.TemplateHashAnnotation] ||
			!equality.Semantic.DeepEqual(o.GetOwnerReferences(), n.GetOwnerReferences()) {
			return true
		}
		op, okOld := o.(T)
		np, okNew := n.(T)
		return okOld && okNew && complianceOf(op) != "" && complianceOf(np) == ""
	}}
}
