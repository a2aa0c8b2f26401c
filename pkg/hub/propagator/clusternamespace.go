package propagator

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/templating"
)

// ReasonInClusterNamespace (False): the root policy is in the namespace of
// a managed cluster, which holds that cluster's replicas and its encryption
// key, so it is not propagated (as OCM refuses it); it must be created in
// another namespace.
const ReasonInClusterNamespace = "InClusterNamespace"

// managedClusterGVK is the kind whose existence makes a namespace a
// cluster namespace.
var managedClusterGVK = schema.GroupVersionKind{Group: clusterv1.GroupName, Version: "v1", Kind: "ManagedCluster"}

// inClusterNamespace reports whether ns is the namespace of a managed
// cluster: OCM's test, a ManagedCluster of that name exists. (The
// registration controller also labels that namespace, but keeps it, label
// and all, after the cluster is gone.)
func (r *Reconciler) inClusterNamespace(ctx context.Context, ns string) (bool, error) {
	mc := &metav1.PartialObjectMetadata{}
	mc.SetGroupVersionKind(managedClusterGVK)
	err := r.Client.Get(ctx, types.NamespacedName{Name: ns}, mc)
	if apierrors.IsNotFound(err) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("reading ManagedCluster %s: %w", ns, err)
	}
	return true, nil
}

// refuseInClusterNamespace leaves a root in a cluster namespace without
// replicas (deleting those it had before its namespace became a
// cluster's), with a condition that says why; it is never propagated until
// the ManagedCluster goes.
//
// Note: OCM deletes such a policy; the propagator only refuses it, so that
// nothing a user wrote is lost.
func (r *Reconciler) refuseInClusterNamespace(ctx context.Context, policy *policyv1.Policy) (ctrl.Result, error) {
	policy.Status.Placement = nil
	r.setPropagated(policy, InClusterNamespaceCondition(policy))
	if err := r.reconcileDelete(ctx, client.ObjectKeyFromObject(policy)); err != nil {
		return ctrl.Result{}, fmt.Errorf("deleting the replicas of %s: %w", klog.KObj(policy), err)
	}
	return ctrl.Result{}, reconcile.TerminalError(fmt.Errorf("policy %s is in the namespace of managed cluster %s",
		klog.KObj(policy), policy.Namespace))
}

// InClusterNamespaceCondition is ConditionPropagated of a root policy in
// the namespace of a managed cluster.
func InClusterNamespaceCondition(root *policyv1.Policy) metav1.Condition {
	return metav1.Condition{
		Type:               ConditionPropagated,
		Status:             metav1.ConditionFalse,
		ObservedGeneration: root.Generation,
		Reason:             ReasonInClusterNamespace,
		Message: fmt.Sprintf("This policy is in the namespace of managed cluster %s, which holds that cluster's replicas "+
			"and its encryption key (Secret %s): a policy there is not propagated, as in OCM. "+
			"Create the policy in another namespace, with its PlacementBinding, and delete this one.",
			root.Namespace, templating.EncryptionKeySecret),
	}
}

// managedClusterToRoots maps a ManagedCluster that appeared or went to the
// root policies of the namespace of the same name.
func (r *Reconciler) managedClusterToRoots(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &policyv1.PolicyList{}
	if err := r.Client.List(ctx, list, client.InNamespace(obj.GetName())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list the policies of a cluster namespace", "namespace", obj.GetName())
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		if isRoot(&list.Items[i]) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}
