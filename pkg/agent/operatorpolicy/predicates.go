package operatorpolicy

import (
	"maps"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
)

// evaluationTriggers lets through the changes of an OperatorPolicy that
// call for an evaluation: its spec (generation), labels and owners (which
// name the parent Policy), and a status emptied by someone else. Status
// updates, this controller's own included, do not.
func evaluationTriggers() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld, e.ObjectNew
		if o.GetGeneration() != n.GetGeneration() || !maps.Equal(o.GetLabels(), n.GetLabels()) ||
			!equality.Semantic.DeepEqual(o.GetOwnerReferences(), n.GetOwnerReferences()) {
			return true
		}
		op, okOld := o.(*policyv1beta1.OperatorPolicy)
		np, okNew := n.(*policyv1beta1.OperatorPolicy)
		return okOld && okNew && op.Status.ComplianceState != "" && np.Status.ComplianceState == ""
	}}
}
