package configpolicy

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// evaluationTriggers lets through the changes of a ConfigurationPolicy that
// call for an evaluation: its spec (generation), deletion, finalizers,
// labels and owners (which name the parent Policy), and a status emptied by
// someone else. Status updates, this controller's own included, do not.
func evaluationTriggers() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld, e.ObjectNew
		if o.GetGeneration() != n.GetGeneration() ||
			!n.GetDeletionTimestamp().Equal(o.GetDeletionTimestamp()) ||
			!slices.Equal(o.GetFinalizers(), n.GetFinalizers()) ||
			!maps.Equal(o.GetLabels(), n.GetLabels()) ||
			!equality.Semantic.DeepEqual(o.GetOwnerReferences(), n.GetOwnerReferences()) {
			return true
		}
		op, okOld := o.(*policyv1.ConfigurationPolicy)
		np, okNew := n.(*policyv1.ConfigurationPolicy)
		return okOld && okNew && op.Status.ComplianceState != "" && np.Status.ComplianceState == ""
	}}
}
