package configpolicy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	depclient "github.com/stolostron/kubernetes-dependency-watches/client"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// heldRecheck is how often a deleted policy looks again at objects it
// deleted that finalizers still hold, besides the watch on them.
const heldRecheck = 30 * time.Second

// pruneDeleted deletes the objects of a deleted policy per its
// pruneObjectBehavior: DeleteAll deletes every related object,
// DeleteIfCreated those the policy created (and that were not replaced
// since). As in OCM, only enforced policies prune. It returns the objects
// that are not gone, in OCM's words ("/v1, Kind=Pod "name" in namespace
// default"), and the errors other than an object that finalizers still
// hold. The objects it deleted are read through the dynamic watcher, so
// that one held by finalizers re-evaluates the policy when it goes.
//
// Note: the objects come from status.relatedObjects, written by the last
// evaluation: whether the policy created an object is recorded nowhere
// else.
func (r *Reconciler) pruneDeleted(ctx context.Context, policy *policyv1.ConfigurationPolicy) (notGone []string, errs []error) {
	if !prunes(policy) {
		return nil, nil
	}
	id, end, err := r.base.StartQueryBatch(ctx, client.ObjectKeyFromObject(policy))
	if err != nil {
		return nil, []error{err}
	}
	defer end()
	reader := watchReader{watcher: r.watcher, id: id, direct: directReader{client: r.dynamic}}
	for _, rel := range policy.Status.RelatedObjects {
		if rel.Object.Metadata.Name == condensedName {
			continue // no object: see condensedName
		}
		_, err := r.pruneRelated(ctx, reader, policy.Spec.PruneObjectBehavior, rel)
		if err == nil {
			continue
		}
		notGone = append(notGone, describeObject(rel.Object))
		if !errors.Is(err, errHeld) {
			errs = append(errs, err)
		}
	}
	return notGone, errs
}

// errHeld is an object that was deleted and is still there: finalizers of
// its own hold it.
var errHeld = errors.New("deleted, and held by its finalizers")

// describeObject names obj as OCM's cleanup failures do.
func describeObject(obj policyv1.ObjectResource) string {
	gvk := schema.FromAPIVersionAndKind(obj.APIVersion, obj.Kind)
	return fmt.Sprintf("%s %q in namespace %s", gvk, obj.Metadata.Name, obj.Metadata.Namespace)
}

// setCleanupFailed makes a deleted policy whose objects are not all gone
// Terminating, saying which, as OCM does.
func setCleanupFailed(policy *policyv1.ConfigurationPolicy, notGone []string, errs []error, now time.Time) {
	msg := "Failed to delete objects: " + strings.Join(notGone, ", ")
	if len(notGone) == 0 {
		msg = "Failed to delete objects: " + kerrors.NewAggregate(errs).Error()
	}
	prev := policy.Status
	policy.Status.ComplianceState = policyv1.Terminating
	policy.Status.CompliancyDetails = []policyv1.TemplateStatus{templateStatus(prev, 0, false, reasonCleanupError, msg, now)}
}

// reasonCleanupError is OCM's reason for objects a deleted policy could
// not delete.
const reasonCleanupError = "Cleanup error"

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
		deleted, err := e.r.pruneRelated(ctx, e.reader, e.policy.Spec.PruneObjectBehavior, rel)
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
// It reads the object back with reader: one still there is errHeld.
func (r *Reconciler) pruneRelated(ctx context.Context, reader objectReader, behavior policyv1.PruneObjectBehavior, rel policyv1.RelatedObject) (bool, error) {
	var uid *types.UID
	if behavior == policyv1.PruneDeleteIfCreated {
		if !createdByPolicy(rel) {
			return false, nil
		}
		id := types.UID(rel.Properties.UID)
		uid = &id
	}
	return true, r.pruneObject(ctx, reader, rel.Object, uid)
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
		if rel.Object.Metadata.Name != "" && rel.Object.Metadata.Name != condensedName && !listed[objectKey(rel.Object)] {
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
			if _, known := phrases[r.reason]; !known && !r.compliant && r.reason != ReasonCreatedStatusUnchecked {
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

// pruneObject deletes obj, only if its UID is uid when uid is set, and
// reads it back with reader: an object still there is errHeld.
func (r *Reconciler) pruneObject(ctx context.Context, reader objectReader, obj policyv1.ObjectResource, uid *types.UID) error {
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
	name := identifier(obj.Metadata.Name, obj.Metadata.Namespace)
	err = resourceFor(r.dynamic, gvr, obj.Metadata.Namespace).Delete(ctx, obj.Metadata.Name, opts)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case uid != nil && apierrors.IsConflict(err):
		return nil // replaced since the policy created it: not the policy's any more
	case err != nil:
		return fmt.Errorf("deleting %s %s: %w", obj.Kind, name, err)
	}
	left, err := reader.get(ctx, gvr, gvk, obj.Metadata.Namespace, obj.Metadata.Name)
	switch {
	case err != nil:
		return fmt.Errorf("reading %s %s after deleting it: %w", obj.Kind, name, err)
	case left != nil && (uid == nil || left.GetUID() == *uid):
		return fmt.Errorf("%s %s: %w", obj.Kind, name, errHeld)
	}
	return nil
}

// crdName is the ConfigurationPolicy CRD's name.
const crdName = "configurationpolicies.policy.open-cluster-management.io"

// definitionDeleting reports whether the ConfigurationPolicy CRD is being
// deleted or is gone: then every policy is deleted with it, and none
// prunes (OCM's rule; an uninstall must not delete what policies made).
func (r *Reconciler) definitionDeleting(ctx context.Context) (bool, error) {
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	err := r.ManagedReader.Get(ctx, client.ObjectKey{Name: crdName}, crd)
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("reading the ConfigurationPolicy CRD: %w", err)
	}
	return !crd.DeletionTimestamp.IsZero(), nil
}
