package ocmagents

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/internal/test/testenv"
)

// Timings of an OCM process: how long it may take to show it works (several
// control planes and agents start at once on small machines), and how long
// it has to stop after SIGTERM before it gets SIGKILL.
const (
	readyTimeout = 2 * time.Minute
	stopGrace    = 5 * time.Second
)

// envDir is set on every OCM process to the Dir of its Env, so that a test
// can find the processes of an Env (see processes).
const envDir = "CANOPY_OCMAGENTS_DIR"

// processes returns the pids of the live OCM processes started for the Env
// whose Dir is dir.
func processes(dir string) []int {
	return controlplane.ProcessesWithEnv(envDir + "=" + dir)
}

// process is an OCM binary to run for an Env.
type process struct {
	// name names the component, and its log file: <dir>/<name>.log.
	name string
	// bin is the binary's name in the assets directory.
	bin string
	// path, when set, is the binary to run instead of bin, such as
	// kube-controller-manager.
	path string
	// plain says the binary is not one of OCM's controllers and agents
	// (library-go's controllercmd), so it gets no serving flags (see
	// servingFlags).
	plain bool
	// env is added to the process's environment.
	env []string
	// onExit, when set, runs once the process has exited.
	onExit func()
	// args are its arguments.
	args []string
	// ready is a text its log shows once it works, such as the line OCM's
	// base controller (sdk-go's basecontroller) logs when a worker of the
	// controller that matters starts: start returns then.
	ready string
}

// start starts p for env until env.Stop (see run).
func (p process) start(ctx context.Context, env *testenv.Env) error {
	bctx, goRun := env.Background(ctx)
	return p.run(ctx, bctx, goRun, env.Dir)
}

// run starts p with its output in dir/logs/<p.name>.log, not the test's, and
// returns once the log shows p.ready. The process runs until bctx ends, then
// gets SIGTERM, and SIGKILL after stopGrace; goRun waits for it. It dies
// with the test process too: the kernel kills it (tieToTest) and, failing
// that, internal/test/controlplane's Sweep finds it by its owner mark. When the
// process exits first, takes longer than readyTimeout, or ctx ends, run stops
// it and fails, with the end of its log.
func (p process) run(ctx, bctx context.Context, goRun func(func()), dir string) error {
	logPath := filepath.Join(dir, "logs", p.name+".log")
	tmp := filepath.Join(dir, p.name+".tmp") // its config, its self-signed serving certificates
	if err := os.MkdirAll(filepath.Dir(logPath), 0o750); err != nil {
		return err
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer func() { _ = logFile.Close() }() // the process has its own descriptor
	pctx, stop := context.WithCancel(bctx)
	cmd, err := p.command(pctx, dir, tmp, logFile)
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		stop()
		_ = os.RemoveAll(tmp)
		if p.onExit != nil {
			p.onExit()
		}
		return fmt.Errorf("starting OCM's %s: %w", p.name, err)
	}
	var waitErr error
	var ready atomic.Bool // then Start has returned: an exit is news
	exited := make(chan struct{})
	goRun(func() {
		waitErr = cmd.Wait()
		if ready.Load() && pctx.Err() == nil {
			fmt.Fprintf(os.Stderr, "ocmagents: OCM's %s exited: %v; end of %s:\n%s\n", p.name, waitErr, logPath, logTail(logPath))
		}
		stop()
		_ = os.RemoveAll(tmp)
		if p.onExit != nil {
			p.onExit()
		}
		close(exited)
	})
	if err := p.waitReady(ctx, logPath, exited); err != nil {
		stop()
		<-exited
		if errors.Is(err, errExited) {
			err = fmt.Errorf("OCM's %s exited while starting (%w); end of %s:\n%s", p.name, waitErr, logPath, logTail(logPath))
		}
		return err
	}
	ready.Store(true)
	return nil
}

// command returns the command that runs p until ctx ends, in dir (see run),
// its temporary files in tmp and its output to log.
func (p process) command(ctx context.Context, dir, tmp string, log *os.File) (*exec.Cmd, error) {
	bin, args := p.path, p.args
	if bin == "" {
		var err error
		if bin, err = binaryPath(p.bin); err != nil {
			return nil, err
		}
	}
	if !p.plain {
		servingArgs, err := servingFlags(tmp)
		if err != nil {
			return nil, err
		}
		args = slices.Concat(args, servingArgs)
	}
	owner, err := controlplane.OwnerEnv()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = stopGrace
	cmd.Env = slices.Concat(os.Environ(), p.env, []string{owner, envDir + "=" + dir, "TMPDIR=" + tmp})
	cmd.Stdout, cmd.Stderr = log, log
	tieToTest(cmd)
	return cmd, nil
}

// errExited reports that the process exited before it was ready.
var errExited = errors.New("exited")

// waitReady waits until the log at logPath shows p.ready; it fails when the
// process exits first (errExited), takes longer than readyTimeout, or ctx
// ends.
func (p process) waitReady(ctx context.Context, logPath string, exited <-chan struct{}) error {
	deadline := time.NewTimer(readyTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-exited:
			return errExited
		case <-deadline.C:
			return fmt.Errorf("OCM's %s did not start within %v; end of %s:\n%s", p.name, readyTimeout, logPath, logTail(logPath))
		case <-ctx.Done():
			return fmt.Errorf("starting OCM's %s: %w", p.name, ctx.Err())
		case <-tick.C:
			if data, err := os.ReadFile(logPath); err == nil && bytes.Contains(data, []byte(p.ready)) {
				return nil
			}
		}
	}
}

// servingConfig is the configuration (library-go's GenericOperatorConfig)
// of the HTTPS server of metrics and health checks that every OCM binary
// runs (library-go's controllercmd). Nothing here scrapes or probes it: its
// authentication and authorization are off, so that it does not watch
// kube-system's extension-apiserver-authentication, which an envtest API
// server lacks (and logs that every few seconds).
const servingConfig = `apiVersion: operator.openshift.io/v1alpha1
kind: GenericOperatorConfig
authentication:
  disabled: true
authorization:
  disabled: true
`

// servingFlags writes servingConfig into dir and returns the flags of an OCM
// binary's server: that config, and a loopback address with a port free now
// (it serves at 0.0.0.0:8443 unless told, which several processes cannot
// share, and crashes on port 0).
func servingFlags(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	config := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(config, []byte(servingConfig), 0o600); err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("finding a free port: %w", err)
	}
	defer func() { _ = l.Close() }()
	return []string{"--config=" + config, "--listen=" + l.Addr().String()}, nil
}

// logTail returns the last lines of the log at path, for an error.
func logTail(path string) string {
	const maxLines, maxBytes = 20, 4096
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	data = bytes.TrimRight(data, "\n")
	if len(data) > maxBytes {
		data = data[len(data)-maxBytes:]
	}
	lines := bytes.Split(data, []byte("\n"))
	if len(lines) > maxLines {
		lines = lines[len(lines)-maxLines:]
	}
	if len(lines) == 1 && len(lines[0]) == 0 {
		return "(empty)"
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// LogTails returns the end of every log under env.Dir/logs (OCM's
// processes, kube-controller-manager), for a failed test to say what they
// saw.
func LogTails(env *testenv.Env) string {
	logs, _ := filepath.Glob(filepath.Join(env.Dir, "logs", "*.log"))
	var b bytes.Buffer
	for _, f := range logs {
		fmt.Fprintf(&b, "end of %s:\n%s\n", f, logTail(f))
	}
	return b.String()
}
