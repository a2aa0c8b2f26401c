package webdriver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"time"
)

// Paths of Debian's chromium and chromium-driver packages.
const (
	DriverPath   = "/usr/bin/chromedriver"
	ChromiumPath = "/usr/bin/chromium"
)

// ErrMissing says that chromium or chromedriver is not installed.
var ErrMissing = errors.New("chromium and chromedriver are required: " +
	"apt-get install -y --no-install-recommends chromium chromium-driver")

// Driver is a running chromedriver.
type Driver struct {
	// URL is the driver's base URL, http://127.0.0.1:<port>.
	URL  string
	cmd  *exec.Cmd
	done chan struct{}
	http *http.Client
}

// StartDriver starts the chromedriver at path on a free loopback port and
// waits until it is ready. Stop ends it.
func StartDriver(ctx context.Context, path string) (*Driver, error) {
	for _, bin := range []string{path, ChromiumPath} {
		if _, err := os.Stat(bin); err != nil {
			return nil, fmt.Errorf("%w (%s: %w)", ErrMissing, bin, err)
		}
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	// Note: not exec.CommandContext: the driver lives until Stop, not until
	// the start context ends.
	cmd := exec.Command(path, "--port="+strconv.Itoa(port), "--allowed-ips=127.0.0.1") //nolint:gosec // the driver path is the caller's
	ownGroup(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", path, err)
	}
	d := &Driver{URL: fmt.Sprintf("http://127.0.0.1:%d", port), cmd: cmd, done: make(chan struct{}),
		http: &http.Client{Timeout: 2 * time.Minute}}
	go func() { _ = cmd.Wait(); close(d.done) }()
	if err := d.waitReady(ctx); err != nil {
		d.Stop()
		return nil, err
	}
	return d, nil
}

// waitReady polls the driver's /status until it answers ready.
func (d *Driver) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		var status struct {
			Ready bool `json:"ready"`
		}
		err := d.do(ctx, http.MethodGet, "/status", nil, &status)
		if err == nil && status.Ready {
			return nil
		}
		select {
		case <-d.done:
			return errors.New("chromedriver exited before it was ready")
		case <-ctx.Done():
			return fmt.Errorf("waiting for chromedriver: %w (last error: %w)", ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Stop kills the driver and the browsers of sessions not deleted (its
// process group), and waits for the driver to exit.
func (d *Driver) Stop() {
	killGroup(d.cmd)
	<-d.done
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
