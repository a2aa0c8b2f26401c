package configpolicy

import (
	"context"
	"fmt"
	"time"

	depclient "github.com/stolostron/kubernetes-dependency-watches/client"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// immutableMessage ends the message of an update the API server refuses as
// invalid under recreateOption None, after "<resource> [<name>] in
// namespace <ns>". The words are OCM's.
const immutableMessage = ` cannot be updated, likely due to immutable fields not matching, ` +
	`you may set spec["object-templates"][].recreateOption to recreate the object`

// How long a recreate waits for the deleted object to go (objects with
// finalizers linger): recreateAttempts creates, recreateWait apart, as OCM.
const (
	recreateAttempts = 3
	recreateWait     = time.Second
)

// updateAction is how enforce brings an existing object in line.
type updateAction int

const (
	// actionUpdate updates the object.
	actionUpdate updateAction = iota
	// actionRecreate deletes the object and creates it from the template.
	actionRecreate
	// actionRefuse reports the object noncompliant: the API server refuses
	// the update and recreateOption does not allow a recreate.
	actionRefuse
)

// recreateAction says what enforce does with an object that needs an
// update, from the template's recreateOption and the error of the dry-run
// update (nil if it passed). An invalid update (an immutable field) is
// recreated under IfRequired and Always; Always recreates on every update.
// Other dry-run errors go to the real update, which reports them.
func recreateAction(option policyv1.RecreateOption, dryRunErr error) updateAction {
	invalid := apierrors.IsInvalid(dryRunErr)
	switch {
	case invalid && (option == policyv1.RecreateIfRequired || option == policyv1.RecreateAlways):
		return actionRecreate
	case invalid:
		return actionRefuse
	case dryRunErr == nil && option == policyv1.RecreateAlways:
		return actionRecreate
	}
	return actionUpdate
}

// recreate deletes existing and creates the template's object in its place.
// o is the outcome so far (found but not as specified); on success the
// result is OCM's "K8s update success". A server-side dry-run create first
// checks that the API server would accept the new object, so that bad input
// never deletes an object it cannot put back. A conflict (the object was
// replaced since it was read) is returned for found to read it again.
func (e *evaluation) recreate(ctx context.Context, t *objectTemplate, gvr depclient.ScopedGVR,
	existing *unstructured.Unstructured, o objectOutcome,
) (objectOutcome, error) {
	ns, name := existing.GetNamespace(), existing.GetName()
	prefix := gvr.Resource + " " + identifier(name, ns)
	res := resourceFor(e.r.dynamic, gvr, ns)
	obj := &unstructured.Unstructured{Object: t.newObject(ns)}
	obj.SetName(name)
	_, err := res.Create(ctx, obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: metav1.FieldValidationStrict})
	if err != nil && !apierrors.IsAlreadyExists(err) { // AlreadyExists comes after validation: the object is valid
		o.result = e.apiFailure(err, ReasonUpdateError, fmt.Sprintf("%s failed to recreate with the error `%v`", prefix, err))
		return o, nil
	}
	uid := existing.GetUID()
	err = res.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	switch {
	case apierrors.IsConflict(err):
		return o, err
	case err != nil && !apierrors.IsNotFound(err):
		o.result = e.apiFailure(err, ReasonUpdateError, fmt.Sprintf("%s failed to delete when recreating with the error %v", prefix, err))
		return o, nil
	}
	ctrl.LoggerFrom(ctx).Info("Deleted an object to recreate it", "policy", klog.KObj(e.policy), "kind", t.gvk.Kind,
		"object", klog.KObj(existing), "recreateOption", t.recreate)
	created, err := createWhenGone(ctx, res, obj)
	switch {
	case apierrors.IsAlreadyExists(err):
		e.transient = append(e.transient, fmt.Errorf("recreating %s: %w", prefix, err))
		o.result = objectResult{reason: ReasonUpdateError, message: prefix +
			" timed out waiting for the object to delete during recreate, will retry on the next policy evaluation"}
		o.obj = nil
		return o, nil
	case err != nil:
		o.result = e.apiFailure(err, ReasonUpdateError, fmt.Sprintf("%s failed to recreate with the error `%v`", prefix, err))
		o.obj = nil
		return o, nil
	}
	o.result, o.obj, o.replacedUID = objectResult{reason: ReasonUpdated, compliant: true}, created, uid
	return o, nil
}

// createWhenGone creates obj, trying again while the object it replaces is
// still being deleted; it gives up with the AlreadyExists error.
func createWhenGone(ctx context.Context, res dynamic.ResourceInterface, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	for attempt := 1; ; attempt++ {
		created, err := res.Create(ctx, obj, metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict})
		if !apierrors.IsAlreadyExists(err) || attempt == recreateAttempts {
			return created, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(recreateWait):
		}
	}
}
