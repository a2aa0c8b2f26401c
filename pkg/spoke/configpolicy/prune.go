package configpolicy

import (
	"context"
	"errors"
	"fmt"

	depclient "github.com/stolostron/kubernetes-dependency-watches/client"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// prune deletes the objects of a deleted policy per its
// pruneObjectBehavior: DeleteAll deletes every related object,
// DeleteIfCreated those the policy created (and that were not replaced
// since). As in OCM, only enforced policies prune.
//
// Note: the objects come from status.relatedObjects, written by the last
// evaluation: whether the policy created an object is recorded nowhere
// else.
func (r *Reconciler) prune(ctx context.Context, policy *policyv1.ConfigurationPolicy) []error {
	behavior := policy.Spec.PruneObjectBehavior
	if !policy.Spec.RemediationAction.IsEnforce() ||
		(behavior != policyv1.PruneDeleteAll && behavior != policyv1.PruneDeleteIfCreated) {
		return nil
	}
	var errs []error
	for _, rel := range policy.Status.RelatedObjects {
		var uid *types.UID
		if behavior == policyv1.PruneDeleteIfCreated {
			if !createdByPolicy(rel) {
				continue
			}
			id := types.UID(rel.Properties.UID)
			uid = &id
		}
		if err := r.pruneObject(ctx, rel.Object, uid); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

func createdByPolicy(rel policyv1.RelatedObject) bool {
	p := rel.Properties
	return p != nil && p.CreatedByPolicy != nil && *p.CreatedByPolicy && p.UID != ""
}

// pruneObject deletes obj, only if its UID is uid when uid is set.
func (r *Reconciler) pruneObject(ctx context.Context, obj policyv1.ObjectResource, uid *types.UID) error {
	gvk := schema.FromAPIVersionAndKind(obj.APIVersion, obj.Kind)
	gvr, err := r.watcher.GVKToGVR(gvk)
	if errors.Is(err, depclient.ErrNoVersionedResource) {
		return nil // the kind is gone, and its objects with it
	}
	if err != nil && !errors.Is(err, depclient.ErrResourceUnwatchable) {
		return fmt.Errorf("finding the API resource of %s: %w", gvk, err)
	}
	opts := metav1.DeleteOptions{}
	if uid != nil {
		opts.Preconditions = &metav1.Preconditions{UID: uid}
	}
	err = resourceFor(r.dynamic, gvr, obj.Metadata.Namespace).Delete(ctx, obj.Metadata.Name, opts)
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return nil
	case uid != nil && apierrors.IsConflict(err):
		return nil // replaced since the policy created it: not the policy's any more
	}
	return fmt.Errorf("deleting %s %s: %w", obj.Kind, identifier(obj.Metadata.Name, obj.Metadata.Namespace), err)
}
