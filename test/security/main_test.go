package security_test

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/canopy-policy/canopy/internal/cmdutil"
	"github.com/canopy-policy/canopy/internal/test/testenv"
	"github.com/canopy-policy/canopy/test/inproc"
)

// suite is a hub and two managed clusters joined as an OCM fleet: every
// agent identity the tests check is one OCM issued.
var suite = &testenv.Suite{
	Options: testenv.Options{ManagedClusters: []string{"cluster1", "cluster2"}, Unregistered: true},
	Start: func(e *testenv.Env) (func() error, error) {
		env = e
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		return func() error { return nil }, inproc.JoinFleet(ctx, e)
	},
}

// env is the suite's Env, set when it starts: every test starts it first
// with suite.Get.
var env *testenv.Env

// logs receives every log line of the controllers in this process, at the
// highest verbosity, for TestNoSecretInOutputs to search.
var logs syncBuffer

func TestMain(m *testing.M) {
	// The binaries' logger (cmdutil.SetupLogger) with a buffer for output;
	// Note: controller-runtime keeps the first logger set, so it is set
	// before the suite sets its own.
	logger := cmdutil.RedactBodies(funcr.New(func(prefix, args string) { logs.WriteString(prefix + " " + args + "\n") },
		funcr.Options{Verbosity: 10}))
	ctrl.SetLogger(logger)
	klog.SetLogger(logger)
	suite.Main(m)
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// WriteString appends s.
func (b *syncBuffer) WriteString(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.WriteString(s)
}

// String returns everything written so far.
func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// logErrorsOnFailure logs, when the test fails, the last controller log
// lines that report errors, to say what went wrong.
func logErrorsOnFailure(t *testing.T) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		var lines []string
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, `"error"`) || strings.Contains(strings.ToLower(l), "forbidden") {
				lines = append(lines, l)
			}
		}
		t.Logf("controller errors (last %d):\n%s", min(len(lines), 40), strings.Join(lines[max(0, len(lines)-40):], "\n"))
	})
}
