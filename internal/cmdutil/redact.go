package cmdutil

import "github.com/go-logr/logr"

// bodyDumps are the messages client-go logs request and response bodies
// with (at V(8) and more): whole objects, Secrets included.
var bodyDumps = map[string]bool{"Request Body": true, "Response Body": true}

// RedactBodies returns l without client-go's request and response body
// dumps, so that no verbosity makes the binaries log a Secret's data.
//
// Note: client-go logs through the controllers' contextual logger, so
// these dumps follow the controllers' verbosity, not klog's -v flag.
func RedactBodies(l logr.Logger) logr.Logger {
	sink := l.GetSink()
	if sink == nil {
		return l
	}
	// Note: the sink was initialised when l was made: WithSink, unlike
	// logr.New, does not initialise it again (which would add logr's call
	// depth to l's own sink a second time). The redacting sink's methods are
	// one frame between the caller and the sink, which WithCallDepth(1) skips.
	if cd, ok := sink.(logr.CallDepthLogSink); ok {
		sink = cd.WithCallDepth(1)
	}
	return l.WithSink(redactingSink{sink})
}

// redactingSink drops the entries of bodyDumps.
type redactingSink struct{ logr.LogSink }

// Info drops body dumps and passes everything else on.
func (s redactingSink) Info(level int, msg string, keysAndValues ...any) {
	if !bodyDumps[msg] {
		s.LogSink.Info(level, msg, keysAndValues...)
	}
}

// Error passes errors on. It is a method of its own so that, as for Info,
// one frame of redactingSink is between the caller and the sink.
func (s redactingSink) Error(err error, msg string, keysAndValues ...any) {
	s.LogSink.Error(err, msg, keysAndValues...)
}

// WithValues keeps the redaction on the derived sink.
func (s redactingSink) WithValues(keysAndValues ...any) logr.LogSink {
	return redactingSink{s.LogSink.WithValues(keysAndValues...)}
}

// WithName keeps the redaction on the derived sink.
func (s redactingSink) WithName(name string) logr.LogSink {
	return redactingSink{s.LogSink.WithName(name)}
}

// WithCallDepth keeps the caller right when the sink reports it.
func (s redactingSink) WithCallDepth(depth int) logr.LogSink {
	if cd, ok := s.LogSink.(logr.CallDepthLogSink); ok {
		return redactingSink{cd.WithCallDepth(depth)}
	}
	return s
}
