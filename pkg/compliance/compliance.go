package compliance

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// ReasonPrefix starts the reason of every compliance event.
const ReasonPrefix = "policy: "

// MaxMessageLength is the longest event message written, in bytes; longer
// messages are cut at a character boundary and end with "...".
//
// Note: OCM's config-policy-controller caps its compliance messages at 4096
// (controllers/configurationpolicy_controller.go, updatePolicyStatus, since
// 2025); the API server limits core/v1 Event messages only by the object's
// size (the 1024-byte note limit is events.k8s.io's).
const MaxMessageLength = 4096

// Event actions: what the evaluator did. They let a restarted Recorder know
// whether the last event it finds was a remediation.
const (
	// ActionComplianceStateUpdate marks an event that reports what was found.
	ActionComplianceStateUpdate = "ComplianceStateUpdate"
	// ActionRemediate marks an event whose evaluator changed the cluster to
	// reach the reported state.
	ActionRemediate = "Remediate"
)

// ErrNotCompliance is returned by Parse for an event that is not a
// compliance event (its reason does not start with ReasonPrefix).
var ErrNotCompliance = errors.New("not a compliance event")

// Compliance is the content of a compliance event: one policy template's
// compliance state and what was found.
type Compliance struct {
	// Template is the namespace and name of the policy template object (for
	// example a ConfigurationPolicy), which lives beside its parent Policy.
	Template types.NamespacedName
	// State is Compliant, NonCompliant or Pending.
	State policyv1.ComplianceState
	// Message says what was found, without the leading "<State>; ".
	Message string
}

// Reason returns the event reason of c: "policy: <namespace>/<name>".
func (c Compliance) Reason() string {
	return ReasonPrefix + c.Template.Namespace + "/" + c.Template.Name
}

// EventMessage returns the event message of c, "<State>; <Message>" (or
// just the state when the message is empty), valid UTF-8 and at most
// MaxMessageLength bytes.
func (c Compliance) EventMessage() string {
	msg := string(c.State)
	if c.Message != "" {
		msg += "; " + c.Message
	}
	return truncate(strings.ToValidUTF8(msg, "\uFFFD"))
}

// EventType returns the event type of c: Normal when Compliant, Warning
// otherwise.
func (c Compliance) EventType() string {
	if c.State == policyv1.Compliant {
		return corev1.EventTypeNormal
	}
	return corev1.EventTypeWarning
}

// Parse reads a compliance event. It returns ErrNotCompliance (wrapped) for
// events of other kinds, and an error for a compliance event whose reason or
// message is malformed.
func Parse(ev *corev1.Event) (Compliance, error) {
	template, err := ParseReason(ev.Reason)
	if err != nil {
		return Compliance{}, err
	}
	state, msg, err := ParseMessage(ev.Message)
	if err != nil {
		return Compliance{}, fmt.Errorf("event %s: %w", ev.Name, err)
	}
	return Compliance{Template: template, State: state, Message: msg}, nil
}

// ParseReason reads the template out of a compliance event reason.
func ParseReason(reason string) (types.NamespacedName, error) {
	rest, ok := strings.CutPrefix(reason, ReasonPrefix)
	if !ok {
		return types.NamespacedName{}, fmt.Errorf("reason %q: %w", reason, ErrNotCompliance)
	}
	ns, name, ok := strings.Cut(rest, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return types.NamespacedName{}, fmt.Errorf("reason %q is not %q", reason, ReasonPrefix+"<namespace>/<name>")
	}
	return types.NamespacedName{Namespace: ns, Name: name}, nil
}

// ParseMessage splits a compliance event message into its state and the
// rest.
func ParseMessage(message string) (policyv1.ComplianceState, string, error) {
	head, rest, found := strings.Cut(message, ";")
	state := policyv1.ComplianceState(head)
	switch state {
	case policyv1.Compliant, policyv1.NonCompliant, policyv1.Pending:
	default:
		return "", "", fmt.Errorf("message %q does not start with Compliant, NonCompliant or Pending", message)
	}
	if !found {
		return state, "", nil
	}
	msg, ok := strings.CutPrefix(rest, " ")
	if !ok {
		return "", "", fmt.Errorf("message %q: expected %q after the state", message, "; ")
	}
	return state, msg, nil
}

// truncate cuts s to MaxMessageLength bytes at a character boundary.
func truncate(s string) string {
	if len(s) <= MaxMessageLength {
		return s
	}
	const ellipsis = "..."
	cut := MaxMessageLength - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}
