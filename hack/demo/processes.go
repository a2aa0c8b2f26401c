package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/klog/v2"
)

// process is a Canopy binary the demo runs as a local process, as a pod
// would run it on a real cluster.
type process struct {
	name string
	cmd  *exec.Cmd
	done chan error
}

// startProcess runs bin with args, its output going to logDir/name.log. The
// kernel stops it if the demo dies without stopping it.
func startProcess(name, bin, logDir string, args ...string) (*process, error) {
	if err := os.MkdirAll(logDir, 0o750); err != nil {
		return nil, err
	}
	logPath := filepath.Join(logDir, name+".log")
	log, err := os.Create(logPath) //nolint:gosec // the demo's own log directory
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...) //nolint:gosec // the demo's own binaries
	cmd.Stdout, cmd.Stderr = log, log
	// Note: a process group of its own keeps a Ctrl-C in the terminal from
	// reaching the process directly: the demo stops it, once, with SIGTERM
	// (a second signal makes a controller exit at once, unclean).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, done: make(chan error, 1)}
	go func() {
		p.done <- cmd.Wait()
		_ = log.Close()
	}()
	return p, nil
}

// stop asks the process to shut down gracefully and kills it after a while.
func (p *process) stop() error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signaled() {
			return nil
		}
		return err
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		return fmt.Errorf("%s did not stop within 30s; killed", p.name)
	}
}

// exited returns an error if the process has already ended.
func (p *process) exited(ctx context.Context) error {
	select {
	case err := <-p.done:
		p.done <- err
		if err == nil {
			return fmt.Errorf("%s exited unexpectedly (see its log)", p.name)
		}
		return fmt.Errorf("%s exited (see its log): %w", p.name, err)
	case <-ctx.Done():
		return nil
	default:
		return nil
	}
}

// logKlogToFile sends the demo's own klog output (client-go's warnings, say)
// to logDir/demo.log instead of the terminal the demo talks to. OCM's
// placement controller and work agents are processes with logs of their own
// in logDir.
func logKlogToFile(logDir string) error {
	if err := os.MkdirAll(logDir, 0o750); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(logDir, "demo.log")) //nolint:gosec // the demo's own log directory
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	for name, value := range map[string]string{"logtostderr": "false", "alsologtostderr": "false", "stderrthreshold": "FATAL"} {
		if err := fs.Set(name, value); err != nil {
			return err
		}
	}
	klog.SetOutput(f)
	return nil
}
