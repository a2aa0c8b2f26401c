package cmdutil

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// mainArgsEnv holds the arguments TestMainChild passes to Main; the test
// runs only when it is set, in the child process TestMainExitCodes starts.
const mainArgsEnv = "CMDUTIL_TEST_MAIN_ARGS"

// childReady is the line the child prints on stdout once run waits for a
// signal.
const childReady = "child ready"

// childOptions are the flags of the child's binary.
type childOptions struct {
	serving ServingOptions
	zap     *zap.Options
	fail    string
}

func parseChildFlags(args []string) (childOptions, error) {
	fs := flag.NewFlagSet("child-binary", flag.ContinueOnError)
	var o childOptions
	o.zap = o.serving.BindFlags(fs, "0", "0")
	fs.StringVar(&o.fail, "fail", "", "The error run returns; empty to wait for a signal.")
	if err := ParseFlags(fs, args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 { // an error the flag package does not print
		return o, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	return o, nil
}

// runChild logs at two levels and a body dump, then fails with
// o.fail or waits for SIGTERM.
func runChild(ctx context.Context, o childOptions) error {
	log := ctrl.Log.WithName("child")
	log.Info("Running")
	log.V(1).Info("Debug detail")
	log.Info("Request Body", "body", "secret-data")
	if o.fail != "" {
		return errors.New(o.fail)
	}
	fmt.Println(childReady)
	select {
	case <-ctx.Done():
		log.Info("Stopping on signal")
		return nil
	case <-time.After(time.Minute):
		return errors.New("no signal came")
	}
}

// TestMainChild is the binary TestMainExitCodes runs in a child process.
func TestMainChild(t *testing.T) {
	args, ok := os.LookupEnv(mainArgsEnv)
	if !ok {
		t.Skip("run by TestMainExitCodes in a child process")
	}
	Main(strings.Fields(args), "Child binary failed", parseChildFlags, func(o childOptions) *zap.Options { return o.zap }, runChild)
	fmt.Fprintln(os.Stderr, "Main returned")
}

// mainCases are the runs of TestMainExitCodes: Main's arguments, whether
// the child gets SIGTERM once ready, its exit code, and what its stderr
// holds and does not hold.
var mainCases = []struct {
	name      string
	args      string
	signal    bool
	code      int
	stderr    []string
	notStderr []string
	once      []string // in stderr exactly once
}{{
	name: "a bad flag exits 2 before run", args: "--nope", code: 2,
	stderr:    []string{"flag provided but not defined: -nope", "Usage of child-binary"},
	notStderr: []string{"Running", "Main returned"},
	once:      []string{"flag provided but not defined: -nope"},
}, {
	name: "an invalid argument exits 2 before run", args: "extra", code: 2,
	stderr:    []string{"unexpected arguments: [extra]"},
	notStderr: []string{"Running", "Main returned"},
}, {
	name: "-h returns before run", args: "-h", code: 0,
	stderr:    []string{"Usage of child-binary", "-zap-log-level", "-metrics-bind-address", "Main returned"},
	notStderr: []string{"Running"},
}, {
	name: "a failing run exits 1 and logs why", args: "--fail=boom", code: 1,
	stderr: []string{`"msg":"Running"`, `"msg":"Child binary failed","error":"boom"`,
		`"stacktrace":"github.com/canopy-policy/canopy/internal/cmdutil.Main[`}, // from the frame that logged
	notStderr: []string{"Debug detail", "secret-data", "Main returned"},
}, {
	name: "the logger follows the flags, without body dumps", args: "--fail=boom --zap-log-level=debug", code: 1,
	stderr:    []string{`"msg":"Debug detail"`, `"error":"boom"`},
	notStderr: []string{"secret-data"},
}, {
	name: "SIGTERM cancels run's context", signal: true, code: 0,
	stderr:    []string{`"msg":"Stopping on signal"`, "Main returned"},
	notStderr: []string{"no signal came"},
}}

// TestMainExitCodes runs Main in a child process (this test binary) and
// checks its exit code and what it writes on stderr.
func TestMainExitCodes(t *testing.T) {
	for _, tc := range mainCases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			code, stderr := runMainChild(t, tc.args, tc.signal)
			g.Expect(code).To(Equal(tc.code), "stderr:\n%s", stderr)
			for _, s := range tc.stderr {
				g.Expect(stderr).To(ContainSubstring(s))
			}
			for _, s := range tc.notStderr {
				g.Expect(stderr).NotTo(ContainSubstring(s))
			}
			for _, s := range tc.once {
				g.Expect(strings.Count(stderr, s)).To(Equal(1), "%q in stderr:\n%s", s, stderr)
			}
		})
	}
}

// runMainChild runs TestMainChild in a child process with args for Main,
// sends it SIGTERM once it is ready when signal is set, and returns its
// exit code and stderr. The child is killed when the test ends.
func runMainChild(t *testing.T, args string, signal bool) (int, string) {
	t.Helper()
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	childArgs := []string{"-test.run=^TestMainChild$"}
	if f := flag.Lookup("test.gocoverdir"); f != nil && f.Value.String() != "" {
		childArgs = append(childArgs, "-test.gocoverdir="+f.Value.String()) // the child's coverage counts too
	}
	cmd := exec.CommandContext(ctx, os.Args[0], childArgs...)
	cmd.Env = append(os.Environ(), mainArgsEnv+"="+args)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cmd.Start()).To(Succeed())
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		if signal && lines.Text() == childReady {
			g.Expect(cmd.Process.Signal(syscall.SIGTERM)).To(Succeed())
		}
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("running the child: %v", err)
	}
	return cmd.ProcessState.ExitCode(), stderr.String()
}
