package history

import (
	"errors"
	"strings"
	"sync"

	"github.com/canopy-policy/canopy/pkg/history"
)

// ConditionHistoryRecording is the condition the recorder sets on the hub's
// Deployment: True while compliance history is written, False (with one of
// the reasons below) while it is not. The policy path never waits on it.
const ConditionHistoryRecording = "HistoryRecording"

// Reasons of ConditionHistoryRecording, also the reasons of the Events the
// recorder emits when the condition changes.
const (
	// ReasonRecording: the last operation of each kind on the database
	// succeeded.
	ReasonRecording = "Recording"
	// ReasonInvalidDatabaseURL: --history-database is not a PostgreSQL URL
	// pgx can parse.
	ReasonInvalidDatabaseURL = "InvalidDatabaseURL"
	// ReasonSchemaVersionMismatch: the database holds tables of another
	// schema version than this hub's.
	ReasonSchemaVersionMismatch = "SchemaVersionMismatch"
	// ReasonDatabaseError: the database did not answer or refused an
	// operation (down, unreachable, locked, disk full).
	ReasonDatabaseError = "DatabaseError"
)

// op is a kind of database operation whose last outcome the health keeps.
type op int

// The operations, in the order their failures are reported: the first
// failing one names the condition.
const (
	opOpen op = iota
	opWrite
	opRead
	opPrune
	opCount
)

// String names the operation in metrics and messages.
func (o op) String() string {
	return [...]string{"open", "write", "read", "prune"}[o]
}

// healthState is the recorder's health as the condition shows it.
type healthState struct {
	// OK is whether no operation is failing.
	OK bool
	// Reason is one of the Reason constants.
	Reason string
	// Message says what failed and what to do; it never quotes the URL.
	Message string
}

// health keeps the outcome of the last operation of each kind and signals
// when the state they add up to changes.
type health struct {
	recording string // the OK message: where history is recorded

	mu      sync.Mutex
	failed  [opCount]error
	changed chan struct{}
}

func newHealth(recording string) *health {
	return &health{recording: recording, changed: make(chan struct{}, 1)}
}

// set records the outcome of an operation of kind o.
func (h *health) set(o op, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	before := h.stateLocked()
	h.failed[o] = err
	if h.stateLocked() != before {
		select {
		case h.changed <- struct{}{}:
		default:
		}
	}
}

// state returns the current health.
func (h *health) state() healthState {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stateLocked()
}

func (h *health) stateLocked() healthState {
	for o, err := range h.failed {
		if err != nil {
			return failedState(op(o), err)
		}
	}
	return healthState{OK: true, Reason: ReasonRecording, Message: h.recording}
}

// maxMessage bounds a condition's message.
const maxMessage = 1024

// failedState is the health after err from an operation of kind o.
func failedState(o op, err error) healthState {
	s := healthState{Reason: ReasonDatabaseError}
	switch {
	case errors.Is(err, history.ErrBadURL):
		s.Reason = ReasonInvalidDatabaseURL
	case errors.Is(err, history.ErrSchemaVersion):
		s.Reason = ReasonSchemaVersionMismatch
	}
	s.Message = "Compliance history is not being recorded (" + o.String() + " failed: " + err.Error() +
		"); the hub keeps propagating and reporting status, and records what the replicas' histories still hold once the database answers."
	if len(s.Message) > maxMessage {
		s.Message = strings.ToValidUTF8(s.Message[:maxMessage-3], "") + "..."
	}
	return s
}
