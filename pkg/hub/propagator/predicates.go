package propagator

import (
	"k8s.io/apimachinery/pkg/api/equality"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/canopy-policy/canopy/pkg/replica"
)

// specOrMetadataChanged passes creations, deletions and updates of the spec
// (generation), labels or annotations, never status-only updates: the
// propagator's own status writes and the agents' replica status writes do
// not wake it up.
var specOrMetadataChanged = predicate.Or(
	predicate.GenerationChangedPredicate{},
	predicate.LabelChangedPredicate{},
	predicate.AnnotationChangedPredicate{},
)

// rootChanged passes the changes of root policies that can change their
// replicas.
var rootChanged = predicate.And(predicate.NewPredicateFuncs(isRoot), specOrMetadataChanged)

// replicaChanged passes the changes of replicas that may need undoing:
// creation (also of the initial list, which finds orphans), deletion, and
// changes to their spec or metadata.
var replicaChanged = predicate.And(predicate.NewPredicateFuncs(isReplicaObject), specOrMetadataChanged)

// decisionsChanged passes PlacementDecisions whose clusters, placement
// label or decision-group labels (which order a rollout) changed.
var decisionsChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		oldPD, okOld := e.ObjectOld.(*clusterv1beta1.PlacementDecision)
		newPD, okNew := e.ObjectNew.(*clusterv1beta1.PlacementDecision)
		if !okOld || !okNew {
			return true
		}
		return !equality.Semantic.DeepEqual(oldPD.Status.Decisions, newPD.Status.Decisions) ||
			oldPD.Labels[clusterv1beta1.PlacementLabel] != newPD.Labels[clusterv1beta1.PlacementLabel] ||
			oldPD.Labels[clusterv1beta1.DecisionGroupIndexLabel] != newPD.Labels[clusterv1beta1.DecisionGroupIndexLabel] ||
			oldPD.Labels[clusterv1beta1.DecisionGroupNameLabel] != newPD.Labels[clusterv1beta1.DecisionGroupNameLabel]
	},
}

// existenceChanged passes creations and deletions only.
var existenceChanged = predicate.Funcs{
	UpdateFunc: func(event.UpdateEvent) bool { return false },
}

func isRoot(obj client.Object) bool { return !isReplicaObject(obj) }

func isReplicaObject(obj client.Object) bool { return replica.IsReplica(obj) }
