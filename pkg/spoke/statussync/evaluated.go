package statussync

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/compliance"
	"github.com/canopy-policy/canopy/pkg/replica"
	"github.com/canopy-policy/canopy/pkg/templatekinds"
)

// status.evaluatedGeneration tells the hub which generation of a replica
// the agent has fully evaluated (pkg/replica, "evaluatedGeneration"); a
// rollout moves on by it. This file computes it for a local Policy.

// TemplateObject is what status.evaluatedGeneration reads of a template's
// object.
type TemplateObject struct {
	// UID is the object's UID.
	UID types.UID
	// Version is the hash templatesync stamped on it
	// (compliance.TemplateHashAnnotation): evaluators report it.
	Version string
	// PolicyGeneration is the generation of the local Policy it was written
	// from (replica.PolicyGenerationAnnotation); 0 when unknown.
	PolicyGeneration int64
	// History is the object's status.history, for the kinds that keep one
	// (historyKeeper).
	History []policyv1.HistoryEvent
}

// ConditionEvaluated is statussync's condition on a local Policy: True,
// with the Policy's generation as its observedGeneration, once every
// template of that generation is evaluated and its compliance recorded;
// status.evaluatedGeneration then holds the hub replica's generation. It
// stays so when the events that showed it expire.
const ConditionEvaluated = "Evaluated"

// Reasons of ConditionEvaluated.
const (
	// ReasonAllTemplatesReported: every template reported on the Policy's
	// current generation.
	ReasonAllTemplatesReported = "AllTemplatesReported"
	// ReasonWaitingForReports: a template has not reported on the Policy's
	// current generation yet.
	ReasonWaitingForReports = "WaitingForReports"
)

// Evaluated reports whether every template of policy's spec has, as its
// newest compliance event among current (those that count), a report on
// the Policy's current generation: for a template whose object exists
// (objects, by template name, for the kinds statussync reads), an
// evaluator's report on that object as templatesync wrote it for this
// generation (its UID and version); for one without an object,
// templatesync's report for this generation (replica.TemplateSyncVersion).
// A template of a kind statussync does not read needs a report only.
func Evaluated(policy *policyv1.Policy, current []corev1.Event, objects map[string]TemplateObject) bool {
	newest := NewestEvents(string(policy.UID), current)
	kinds := templateKinds(policy)
	for _, name := range TemplateNames(policy) {
		ev := newest[name]
		_, read := kinds[name]
		obj, exists := objects[name]
		switch {
		case ev == nil:
			return false
		case !read:
		case exists && !reportsOn(ev, obj, policy.Generation):
			return false
		case !exists && ev.Annotations[compliance.TemplateVersionAnnotation] != replica.TemplateSyncVersion(policy.Generation):
			return false
		}
	}
	return true
}

// SetEvaluated sets status.evaluatedGeneration and ConditionEvaluated of
// policy, a local copy of a replica, given whether it is evaluated now
// (Evaluated): to the replica's generation (replica.CopiedGeneration) when
// it is, or was at the same generation of the Policy (its compliance
// events may have expired since); else to 0, waiting.
func SetEvaluated(policy *policyv1.Policy, evaluated bool) {
	gen, copied := replica.CopiedGeneration(policy)
	if !copied {
		return // not a copy of a replica: nothing to report to a hub
	}
	if c := meta.FindStatusCondition(policy.Status.Conditions, ConditionEvaluated); !evaluated && c != nil &&
		c.Status == metav1.ConditionTrue && c.ObservedGeneration == policy.Generation {
		return
	}
	c := metav1.Condition{Type: ConditionEvaluated, Status: metav1.ConditionFalse, ObservedGeneration: policy.Generation,
		Reason: ReasonWaitingForReports, Message: "A template has not reported on the current spec yet."}
	policy.Status.EvaluatedGeneration = 0
	if evaluated {
		c.Status, c.Reason = metav1.ConditionTrue, ReasonAllTemplatesReported
		c.Message = fmt.Sprintf("Every template of generation %d of the hub replica was evaluated and its compliance recorded.", gen)
		policy.Status.EvaluatedGeneration = gen
	}
	meta.SetStatusCondition(&policy.Status.Conditions, c)
}

// EvaluatedGeneration is the status.evaluatedGeneration of local to send to
// its hub replica: local's own, when ConditionEvaluated says it was
// computed for local's current generation; else 0, until statussync has
// looked at the current spec.
func EvaluatedGeneration(local *policyv1.Policy) int64 {
	c := meta.FindStatusCondition(local.Status.Conditions, ConditionEvaluated)
	if c == nil || c.ObservedGeneration != local.Generation {
		return 0
	}
	return local.Status.EvaluatedGeneration
}

// reportsOn reports whether ev is an evaluator's report on obj, written
// from the local Policy at generation.
func reportsOn(ev *corev1.Event, obj TemplateObject, generation int64) bool {
	return obj.PolicyGeneration == generation && ev.Related != nil && ev.Related.UID == obj.UID &&
		ev.Annotations[compliance.TemplateVersionAnnotation] == obj.Version
}

// NewestEvents returns, by template name, the newest of the compliance
// events of the Policy with uid among events, in the order of the history
// (Details: the newest time, then the greater event name).
func NewestEvents(uid string, events []corev1.Event) map[string]*corev1.Event {
	out := map[string]*corev1.Event{}
	for i := range events {
		ev := &events[i]
		c, err := compliance.Parse(ev)
		if err != nil || string(ev.InvolvedObject.UID) != uid {
			continue
		}
		if last, ok := out[c.Template.Name]; !ok || newerEvent(ev, last) {
			out[c.Template.Name] = ev
		}
	}
	return out
}

// newerEvent reports whether a comes after b in a template's history.
func newerEvent(a, b *corev1.Event) bool {
	at, bt := eventTime(a), eventTime(b)
	if !at.Equal(&bt) {
		return at.After(bt.Time)
	}
	return strings.Compare(a.Name, b.Name) > 0
}

// evaluatedObjects reads the template objects EvaluatedGeneration needs,
// by template name, from the cache; a template whose newest event reports
// on another version than the cached object shows is read again from the
// API server, since the cache may lag behind the event.
func (r *Reconciler) evaluatedObjects(ctx context.Context, policy *policyv1.Policy, current []corev1.Event) (map[string]TemplateObject, error) {
	newest := NewestEvents(string(policy.UID), current)
	out := map[string]TemplateObject{}
	for name, gvk := range templateKinds(policy) {
		obj, err := r.readTemplateObject(ctx, r.templates, policy, gvk, name)
		if ev := newest[name]; err == nil && obj != nil && ev != nil && ev.Annotations[compliance.TemplateVersionAnnotation] != obj.Version {
			obj, err = r.readTemplateObject(ctx, r.ManagedReader, policy, gvk, name)
		}
		if err != nil {
			return nil, err
		}
		if obj != nil {
			out[name] = *obj
		}
	}
	return out, nil
}

// readTemplateObject reads the object of template name, of the kind of
// gvk, through reader, when it exists and is policy's; nil otherwise.
func (r *Reconciler) readTemplateObject(ctx context.Context, reader client.Reader, policy *policyv1.Policy, gvk schema.GroupVersionKind, name string) (*TemplateObject, error) {
	ctx, cancel := context.WithTimeout(ctx, templateReadTimeout)
	defer cancel()
	obj := r.templateObject(gvk)
	key := types.NamespacedName{Namespace: policy.Namespace, Name: name}
	clusterScoped := templatekinds.ClusterScoped(gvk.GroupKind()) // Gatekeeper's: its labels say whose it is
	if clusterScoped {
		key.Namespace = ""
	}
	err := reader.Get(ctx, key, obj)
	switch {
	case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading template %s %s: %w", gvk.Kind, name, err)
	case obj.GetLabels()[policyv1.PolicyLabel] != policy.Name,
		clusterScoped && obj.GetLabels()[policyv1.ClusterNamespaceLabel] != policy.Namespace:
		return nil, nil
	}
	gen, _ := strconv.ParseInt(obj.GetAnnotations()[replica.PolicyGenerationAnnotation], 10, 64)
	out := &TemplateObject{UID: obj.GetUID(), Version: obj.GetAnnotations()[compliance.TemplateHashAnnotation], PolicyGeneration: gen}
	if h, ok := obj.(historyKeeper); ok {
		out.History = h.ComplianceHistory()
	}
	return out, nil
}
