package compliance

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// RecordTemplate records the compliance of a policy template — template,
// of kind gvk (typed objects from a cache carry no TypeMeta) — on its parent
// Policy, found through reader by ParentOf. A template without a parent
// (created by hand, not from a Policy) only has its own status, and nothing
// is recorded.
func (r *Recorder) RecordTemplate(ctx context.Context, reader client.Reader, template client.Object,
	gvk schema.GroupVersionKind, state policyv1.ComplianceState, message string, remediated bool) error {
	_, _, err := r.RecordTemplateSent(ctx, reader, template, gvk, state, message, remediated)
	return err
}

// RecordTemplateSent is RecordTemplate, and also returns whether the
// template has a parent Policy and the event written (nil when none was):
// an evaluator that keeps a history in the template's status (OCM's
// status.history) records there what its parent was sent.
func (r *Recorder) RecordTemplateSent(ctx context.Context, reader client.Reader, template client.Object,
	gvk schema.GroupVersionKind, state policyv1.ComplianceState, message string, remediated bool) (bool, *Sent, error) {
	parent, err := ParentOf(ctx, reader, template)
	if err != nil || parent == nil {
		return false, nil, err
	}
	c := Compliance{
		Template: types.NamespacedName{Namespace: template.GetNamespace(), Name: template.GetName()},
		State:    state,
		Message:  message,
	}
	related := &corev1.ObjectReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind,
		Namespace: template.GetNamespace(), Name: template.GetName(), UID: template.GetUID()}
	sent, err := r.record(ctx, *parent, c, RecordOptions{Related: related, Remediated: remediated, Version: templateVersion(template)})
	if err != nil {
		return true, nil, fmt.Errorf("recording the compliance of %s: %w", klog.KObj(template), err)
	}
	if sent != nil {
		ctrl.LoggerFrom(ctx).Info("Compliance changed", "template", klog.KObj(template), "kind", gvk.Kind,
			"compliant", state, "remediated", remediated)
	}
	return true, sent, nil
}

// templateVersion is the version of template a compliance event reports
// on: the hash templatesync wrote of it, or, for a template written by
// someone else, its generation. A new version is reported even when the
// message is the same, as OCM's controllers report each new generation.
func templateVersion(template client.Object) string {
	if hash := template.GetAnnotations()[TemplateHashAnnotation]; hash != "" {
		return hash
	}
	return "generation-" + strconv.FormatInt(template.GetGeneration(), 10)
}
