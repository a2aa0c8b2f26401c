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
	if l.GetSink() == nil {
		return l
	}
	return logr.New(redactingSink{l.GetSink()})
}

// redactingSink drops the entries of bodyDumps.
type redactingSink struct{ logr.LogSink }

// Info drops body dumps and passes everything else on.
func (s redactingSink) Info(level int, msg string, keysAndValues ...any) {
	if !bodyDumps[msg] {
		s.LogSink.Info(level, msg, keysAndValues...)
	}
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
