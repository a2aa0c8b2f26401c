package configpolicy

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/compliance"
)

// maxMessageLength is the longest compliance message, state included, in
// bytes; a longer one is cut and ends with truncatedSuffix. Both are OCM's
// (config-policy-controller controllers/configurationpolicy_controller.go,
// updatePolicyStatus).
const maxMessageLength = 4096

// truncatedSuffix ends a message cut to maxMessageLength.
const truncatedSuffix = "...[truncated]"

// capMessage returns message, the compliance message after the state,
// cut so that "<state>; <message>" is at most maxMessageLength bytes, as
// OCM cuts it. The cut falls on a character boundary (OCM cuts bytes), so
// that the message stays valid UTF-8.
func capMessage(state policyv1.ComplianceState, message string) string {
	prefix := string(state) + "; "
	if len(prefix)+len(message) <= maxMessageLength {
		return message
	}
	cut := maxMessageLength - len(truncatedSuffix) - len(prefix)
	for cut > 0 && !validCut(message, cut) {
		cut--
	}
	return message[:cut] + truncatedSuffix
}

// validCut reports whether s may be cut before byte i without splitting
// a character.
func validCut(s string, i int) bool {
	return i >= len(s) || s[i]&0xC0 != 0x80
}

// withHistory returns status.history after an evaluation whose compliance
// message (state included) is message, at now: sent, the event the parent
// Policy was sent, comes first; a policy without a parent has no events,
// so a new message, or the first evaluation of a new generation (newSpec),
// comes first, at now, as in OCM. The list is newest first and at most
// policyv1.ConfigurationPolicyHistoryLimit long, as OCM keeps it.
//
// Note: the entry's time is the event's, to the microsecond that
// status.history keeps, so that statussync tells the entry from the event
// it repeats when it merges both into the Policy's history.
func withHistory(history []policyv1.HistoryEvent, hasParent bool, sent *compliance.Sent, message string, newSpec bool, now time.Time) []policyv1.HistoryEvent {
	var next policyv1.HistoryEvent
	switch {
	case sent != nil:
		next = policyv1.HistoryEvent{LastTimestamp: metav1.NewMicroTime(sent.At.Truncate(time.Microsecond)), Message: sent.Message}
	case !hasParent && (len(history) == 0 || history[0].Message != message || newSpec):
		next = policyv1.HistoryEvent{LastTimestamp: metav1.NewMicroTime(now.Truncate(time.Microsecond)), Message: message}
	default:
		return history
	}
	out := append([]policyv1.HistoryEvent{next}, history...)
	if len(out) > policyv1.ConfigurationPolicyHistoryLimit {
		out = out[:policyv1.ConfigurationPolicyHistoryLimit]
	}
	return out
}
