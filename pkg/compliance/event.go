package compliance

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// Parent is the Policy a compliance event is recorded on.
type Parent struct {
	// Namespace and Name locate the Policy.
	Namespace, Name string
	// UID is the Policy's UID, which the event's involvedObject carries so
	// that a recreated Policy does not inherit the events of its predecessor.
	UID types.UID
}

// ParentFromPolicy returns p as a Parent.
func ParentFromPolicy(p *policyv1.Policy) Parent {
	return Parent{Namespace: p.Namespace, Name: p.Name, UID: p.UID}
}

// ObjectReference returns the involvedObject of the parent's events.
func (p Parent) ObjectReference() corev1.ObjectReference {
	return corev1.ObjectReference{
		APIVersion: policyv1.GroupVersion.String(),
		Kind:       "Policy",
		Namespace:  p.Namespace,
		Name:       p.Name,
		UID:        p.UID,
	}
}

// ParentOf finds the parent Policy of a policy template object: the owner
// reference of kind Policy, or else the Policy named by the
// policy.open-cluster-management.io/policy label in the template's
// namespace. It returns nil, nil when the template has no parent (then no
// compliance event can be recorded), and an error only when reading the
// labelled Policy fails.
func ParentOf(ctx context.Context, reader client.Reader, template client.Object) (*Parent, error) {
	for _, ref := range template.GetOwnerReferences() {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err == nil && ref.Kind == "Policy" && gv.Group == policyv1.GroupName {
			return &Parent{Namespace: template.GetNamespace(), Name: ref.Name, UID: ref.UID}, nil
		}
	}
	name := template.GetLabels()[policyv1.PolicyLabel]
	if name == "" {
		return nil, nil
	}
	policy := &policyv1.Policy{}
	key := types.NamespacedName{Namespace: template.GetNamespace(), Name: name}
	if err := reader.Get(ctx, key, policy); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("getting parent policy %s: %w", key, err)
	}
	p := ParentFromPolicy(policy)
	return &p, nil
}

// EventSource names who writes compliance events.
type EventSource struct {
	// Component is the reporting controller, for example "canopy-agent".
	Component string
	// Instance is the reporting instance, for example the host name.
	Instance string
}

// TemplateHashAnnotation is set by templatesync on every template object it
// writes: a hash of what it wrote, which changes with every change of the
// template. Evaluators report it as the version they evaluated
// (RecordOptions.Version).
const TemplateHashAnnotation = "templatesync.canopy.io/hash"

// TemplateVersionAnnotation holds, on a compliance event, the version of
// the template object the event reports on (RecordOptions.Version).
const TemplateVersionAnnotation = "compliance.canopy.io/template-version"

// NewEvent builds the compliance event c on parent, at now. related, when
// not nil, references the template object.
//
// The name is "<parent name>.<now in hexadecimal nanoseconds>", as
// client-go's recorder names events, so names sort by time.
func NewEvent(parent Parent, c Compliance, src EventSource, related *corev1.ObjectReference,
	remediated bool, now time.Time,
) *corev1.Event {
	action := ActionComplianceStateUpdate
	if remediated {
		action = ActionRemediate
	}
	ts := metav1.NewTime(now)
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("%s.%x", parent.Name, now.UnixNano()),
			Namespace: parent.Namespace,
		},
		InvolvedObject:      parent.ObjectReference(),
		Related:             related,
		Reason:              c.Reason(),
		Message:             c.EventMessage(),
		Type:                c.EventType(),
		Action:              action,
		Source:              corev1.EventSource{Component: src.Component, Host: src.Instance},
		ReportingController: src.Component,
		ReportingInstance:   src.Instance,
		FirstTimestamp:      ts,
		LastTimestamp:       ts,
		Count:               1,
	}
}

// TemplateRef returns the related object of an event about the template
// name, of kind gvk, in namespace, whose object does not exist or is not
// the writer's: a reference by name, without a UID. templatesync's events
// (Pending, a cycle, an invalid template, a hub template error) carry it,
// as OCM's template-sync does; an evaluator's events reference the object
// it evaluated, with its UID. gvk may be empty when the template names no
// valid kind.
func TemplateRef(gvk schema.GroupVersionKind, namespace, name string) *corev1.ObjectReference {
	ref := &corev1.ObjectReference{Kind: gvk.Kind, Namespace: namespace, Name: name}
	if !gvk.Empty() {
		ref.APIVersion = gvk.GroupVersion().String()
	}
	return ref
}

// Counts reports whether the compliance event ev may decide its template's
// compliance, given the UID of the template object that exists now
// (current; empty when there is none). A compliance event counts only if it
// is about the template as it is now, so that a stale event (written about
// an object deleted since, or arriving late) never overrides a newer truth:
//
//   - an event whose related object has a UID is an evaluator's report on
//     that object: it counts while that object is the current one, and never
//     again once it is gone;
//   - an event whose related object has no UID (TemplateRef) is
//     templatesync's, which writes it when there is no object of its own to
//     evaluate (it deleted it or never wrote it): it always counts, and an
//     evaluator's later report on a new object supersedes it by time;
//   - an event without a related object names no object (agents before
//     this rule, and other writers): it counts only while a template object
//     exists.
func Counts(ev *corev1.Event, current types.UID) bool {
	switch {
	case ev.Related == nil:
		return current != ""
	case ev.Related.UID == "":
		return true
	default:
		return ev.Related.UID == current
	}
}
