package configpolicy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	depclient "github.com/stolostron/kubernetes-dependency-watches/client"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

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
	if !prunes(policy) {
		return nil
	}
	var errs []error
	for _, rel := range policy.Status.RelatedObjects {
		if _, err := r.pruneRelated(ctx, policy.Spec.PruneObjectBehavior, rel); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// pruneUnlisted deletes, per pruneObjectBehavior, the objects the last
// evaluation listed in status.relatedObjects and this one no longer lists:
// their object template was removed, or now names another object or
// namespace. This is OCM's pruning on a policy change. Only enforced
// policies prune, and never after an evaluation in which a template failed
// (a template error must never delete anything): the objects then stay
// listed, and are pruned by the next clean evaluation. An object that
// cannot be deleted stays listed too, and the evaluation is retried.
//
// Note: an object is told by its group, kind, namespace and name, so that
// a template moving to another version of its kind prunes nothing.
func (e *evaluation) pruneUnlisted(ctx context.Context, outcomes []templateOutcome) {
	if !prunes(e.policy) {
		return
	}
	st := &e.policy.Status
	gone := unlisted(e.previous, st.RelatedObjects)
	if len(e.invalid) > 0 || len(e.transient) > 0 || e.unknownKind || failed(outcomes) {
		st.RelatedObjects = append(st.RelatedObjects, gone...)
		return
	}
	for _, rel := range gone {
		deleted, err := e.r.pruneRelated(ctx, e.policy.Spec.PruneObjectBehavior, rel)
		switch {
		case err != nil:
			e.transient = append(e.transient, err)
			st.RelatedObjects = append(st.RelatedObjects, rel)
		case deleted:
			ctrl.LoggerFrom(ctx).Info("Pruned an object the policy no longer lists", "policy", klog.KObj(e.policy),
				"kind", rel.Object.Kind, "object", klog.KRef(rel.Object.Metadata.Namespace, rel.Object.Metadata.Name))
		}
	}
}

// pruneRelated deletes the object of rel per behavior (DeleteAll or
// DeleteIfCreated), and says whether it tried: under DeleteIfCreated only
// an object the policy created, and only while its UID is the recorded one.
func (r *Reconciler) pruneRelated(ctx context.Context, behavior policyv1.PruneObjectBehavior, rel policyv1.RelatedObject) (bool, error) {
	var uid *types.UID
	if behavior == policyv1.PruneDeleteIfCreated {
		if !createdByPolicy(rel) {
			return false, nil
		}
		id := types.UID(rel.Properties.UID)
		uid = &id
	}
	return true, r.pruneObject(ctx, rel.Object, uid)
}

// prunes reports whether policy deletes objects: it is enforced, with
// pruneObjectBehavior DeleteIfCreated or DeleteAll.
func prunes(policy *policyv1.ConfigurationPolicy) bool {
	b := policy.Spec.PruneObjectBehavior
	return policy.Spec.RemediationAction.IsEnforce() && (b == policyv1.PruneDeleteAll || b == policyv1.PruneDeleteIfCreated)
}

// unlisted returns the previous related objects that current does not
// list, by group, kind, namespace and name, in a stable order.
func unlisted(previous map[policyv1.ObjectResource]policyv1.RelatedObject, current []policyv1.RelatedObject) []policyv1.RelatedObject {
	listed := map[string]bool{}
	for _, rel := range current {
		listed[objectKey(rel.Object)] = true
	}
	var out []policyv1.RelatedObject
	for _, rel := range previous {
		if rel.Object.Metadata.Name != "" && !listed[objectKey(rel.Object)] {
			out = append(out, rel)
		}
	}
	slices.SortFunc(out, func(a, b policyv1.RelatedObject) int {
		return strings.Compare(objectKey(a.Object), objectKey(b.Object))
	})
	return out
}

func objectKey(o policyv1.ObjectResource) string {
	gk := schema.FromAPIVersionAndKind(o.APIVersion, o.Kind).GroupKind()
	return gk.String() + "/" + o.Metadata.Namespace + "/" + o.Metadata.Name
}

// failed reports whether a template could not be evaluated or an object
// could not be read or written: a noncompliant result with an error
// message instead of one of the phrases.
func failed(outcomes []templateOutcome) bool {
	for _, o := range outcomes {
		for _, r := range o.results {
			if _, known := phrases[r.reason]; !known && !r.compliant {
				return true
			}
		}
	}
	return false
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
