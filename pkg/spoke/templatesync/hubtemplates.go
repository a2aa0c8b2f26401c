package templatesync

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/templating"
)

// UnresolvedHubTemplates is the error reported for a template that still
// holds a hub template ("{{hub") without the hub's error annotation: a
// policy written on the managed cluster, or copied from a replica. Only the
// hub resolves hub templates, when it builds a cluster's replica.
const UnresolvedHubTemplates = "hub templates ({{hub ... hub}}) cannot be resolved on the managed cluster: " +
	"the hub resolves them when it propagates the policy; create the policy on the hub, or remove its hub templates"

// hubError returns why a template's hub templates cannot be used, or "":
// the error the hub recorded in templating.HubTemplatesErrorAnnotation of
// the objectDefinition def (raw as written), or UnresolvedHubTemplates
// when raw still holds a hub template and templates are not disabled (the
// disable-templates annotation, on the Policy or on the template, makes
// "{{hub" literal text).
func hubError(policy *policyv1.Policy, def *unstructured.Unstructured, raw []byte) string {
	if msg := def.GetAnnotations()[templating.HubTemplatesErrorAnnotation]; msg != "" {
		return msg
	}
	if templating.HasHubTemplate(raw) && !templatesDisabled(policy.Annotations) && !templatesDisabled(def.GetAnnotations()) {
		return UnresolvedHubTemplates
	}
	return ""
}

// templatesDisabled reports whether annotations turn templates off, read as
// OCM reads them (strconv.ParseBool; anything else leaves them on).
func templatesDisabled(annotations map[string]string) bool {
	disabled, err := strconv.ParseBool(annotations[templating.DisableTemplatesAnnotation])
	return err == nil && disabled
}

// reportHubError deletes the object of a template whose hub templates
// failed, so that nothing half resolved acts on the cluster, and reports
// the template NonCompliant with the error, as OCM does ("template-error;
// <error>"). The Recorder writes the event once, not on every reconcile.
func (r *Reconciler) reportHubError(ctx context.Context, policy *policyv1.Policy, t Template) error {
	removeErr := r.deleteWithoutPruning(ctx, policy, t.Object)
	recordErr := r.record(ctx, policy, t.Name, t.Object, policyv1.NonCompliant, templating.TemplateErrorPrefix+t.HubError)
	return errors.Join(removeErr, recordErr)
}

// deleteWithoutPruning deletes the template object of desired if it exists
// and belongs to policy. A ConfigurationPolicy is first set to
// pruneObjectBehavior None: an error on the hub must not delete the objects
// the policy manages on the cluster.
func (r *Reconciler) deleteWithoutPruning(ctx context.Context, policy *policyv1.Policy, desired *unstructured.Unstructured) error {
	existing, err := readObject(ctx, r.ManagedClient, desired.GroupVersionKind(), client.ObjectKeyFromObject(desired))
	if existing == nil || err != nil || !deletable(policy, existing) {
		return err
	}
	if prunes(existing) {
		patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"pruneObjectBehavior":"`+string(policyv1.PruneNone)+`"}}`))
		if err := r.ManagedClient.Patch(ctx, existing, patch); err != nil {
			return client.IgnoreNotFound(fmt.Errorf("setting pruneObjectBehavior None on %s %s: %w", existing.GetKind(), existing.GetName(), err))
		}
		ctrl.LoggerFrom(ctx).Info("Turned pruning off before deleting a template with a hub template error",
			"policy", klog.KObj(policy), "kind", existing.GetKind(), "template", existing.GetName())
	}
	return r.deleteExisting(ctx, policy, existing)
}

// prunes reports whether obj is a ConfigurationPolicy that deletes objects
// when it is deleted.
func prunes(obj *unstructured.Unstructured) bool {
	if obj.GroupVersionKind().GroupKind() != configurationPolicyGVK.GroupKind() {
		return false
	}
	behavior, _, _ := unstructured.NestedString(obj.Object, "spec", "pruneObjectBehavior")
	return behavior != "" && behavior != string(policyv1.PruneNone)
}
