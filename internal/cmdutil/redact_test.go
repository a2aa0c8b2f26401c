package cmdutil

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/gomega"
	uberzap "go.uber.org/zap"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// captured is a funcr logger at every verbosity that keeps its lines,
// with the file and line of each call.
func captured() (logr.Logger, *[]string) {
	var lines []string
	l := funcr.New(func(prefix, args string) { lines = append(lines, strings.TrimSpace(prefix+" "+args)) },
		funcr.Options{LogCaller: funcr.All, Verbosity: 10})
	return l, &lines
}

// here returns "file"=... "line"=... of its caller's line plus offset, as
// funcr prints a caller.
func here(offset int) string {
	_, file, line, _ := runtime.Caller(1)
	return fmt.Sprintf(`"caller"={"file"=%q "line"=%d}`, file[strings.LastIndex(file, "/")+1:], line+offset)
}

// TestRedactBodies checks that client-go's body dumps are dropped at any
// verbosity, on derived loggers too, and that everything else passes.
func TestRedactBodies(t *testing.T) {
	g := NewWithT(t)
	l, lines := captured()
	r := RedactBodies(l)
	r.Info("Request Body", "body", "secret-data")
	r.V(8).Info("Response Body", "body", "secret-data")
	r.WithValues("k", "v").V(9).Info("Request Body", "body", "secret-data")
	r.WithName("client").Info("Response Body", "body", "secret-data")
	r.WithCallDepth(1).Info("Request Body", "body", "secret-data")
	r.V(4).Info("Request Body with a suffix")
	r.WithName("client").WithValues("k", "v").Info("Reconciled")
	r.Error(errors.New("boom"), "Request failed")
	g.Expect(strings.Join(*lines, "\n")).NotTo(ContainSubstring("secret-data"))
	g.Expect(*lines).To(HaveLen(3))
	g.Expect((*lines)[0]).To(ContainSubstring(`"msg"="Request Body with a suffix"`))
	g.Expect((*lines)[1]).To(HavePrefix("client "))
	g.Expect((*lines)[1]).To(ContainSubstring(`"msg"="Reconciled" "k"="v"`))
	g.Expect((*lines)[2]).To(ContainSubstring(`"msg"="Request failed" "error"="boom"`))

	g.Expect(RedactBodies(logr.Discard())).To(Equal(logr.Discard()), "a logger without sink is returned as is")
}

// TestRedactBodiesCaller checks that the redacting sink leaves the caller
// a sink reports where it is, for Info, Error and WithCallDepth, and that
// it does not change the logger it wraps.
func TestRedactBodiesCaller(t *testing.T) {
	g := NewWithT(t)
	l, lines := captured()
	r := RedactBodies(l)
	r.Info("Info")
	g.Expect((*lines)[0]).To(ContainSubstring(here(-1)))
	r.Error(nil, "Error")
	g.Expect((*lines)[1]).To(ContainSubstring(here(-1)))
	r.WithName("n").WithValues("k", "v").Info("Derived")
	g.Expect((*lines)[2]).To(ContainSubstring(here(-1)))
	logAt(r.WithCallDepth(1), "Helper")
	g.Expect((*lines)[3]).To(ContainSubstring(here(-1)), "WithCallDepth skips the helper")
	l.Info("Wrapped")
	g.Expect((*lines)[4]).To(ContainSubstring(here(-1)), "the wrapped logger is unchanged")
	RedactBodies(l).Info("Wrapped twice")
	g.Expect((*lines)[5]).To(ContainSubstring(here(-1)))
}

func logAt(l logr.Logger, msg string) { l.Info(msg) }

// plainSink keeps messages and reports no caller: it has no WithCallDepth.
type plainSink struct{ msgs *[]string }

func (plainSink) Init(logr.RuntimeInfo)                 {}
func (plainSink) Enabled(int) bool                      { return true }
func (s plainSink) Info(_ int, msg string, _ ...any)    { *s.msgs = append(*s.msgs, msg) }
func (s plainSink) Error(_ error, msg string, _ ...any) { *s.msgs = append(*s.msgs, msg) }
func (s plainSink) WithValues(...any) logr.LogSink      { return s }
func (s plainSink) WithName(string) logr.LogSink        { return s }

// TestRedactBodiesWithoutCallDepth checks a sink that cannot skip frames.
func TestRedactBodiesWithoutCallDepth(t *testing.T) {
	var msgs []string
	r := RedactBodies(logr.New(plainSink{&msgs})).WithCallDepth(1)
	r.Info("Request Body")
	r.Info("Kept")
	r.Error(nil, "Response Body")
	NewWithT(t).Expect(msgs).To(Equal([]string{"Kept", "Response Body"}), "Error drops nothing")
}

// TestRedactBodiesZap checks the caller with the binaries' zap logger,
// when its options add the caller.
func TestRedactBodiesZap(t *testing.T) {
	g := NewWithT(t)
	var buf bytes.Buffer
	l := RedactBodies(zap.New(zap.WriteTo(&buf), zap.RawZapOpts(uberzap.AddCaller())))
	l.Info("Info")
	info := here(-1)
	l.Error(errors.New("boom"), "Error")
	errLine := here(-1)
	l.Info("Request Body", "body", "secret-data")
	out := buf.String()
	g.Expect(out).NotTo(ContainSubstring("secret-data"))
	for _, c := range []string{info, errLine} {
		// "caller":"cmdutil/redact_test.go:N"
		var file string
		var line int
		_, err := fmt.Sscanf(c, `"caller"={"file"=%q "line"=%d}`, &file, &line)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(ContainSubstring(fmt.Sprintf(`"caller":"cmdutil/%s:%d"`, file, line)))
	}
}
