// Package cmdtest runs a binary's run function in a test: it waits until the
// process reports ready on its health endpoint, then stops it and checks that
// it shut down cleanly.
package cmdtest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// FreeAddress returns a loopback address with a port that was free a moment ago.
func FreeAddress(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().String()
}

// RunUntilReady starts run in the background, waits until healthAddress
// answers 200 on /healthz and /readyz, and returns a stop function that
// cancels run's context and asserts that run returned nil.
func RunUntilReady(t testing.TB, healthAddress string, run func(ctx context.Context) error) (stop func()) {
	t.Helper()
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()

	for _, path := range []string{"/healthz", "/readyz"} {
		g.Eventually(func() error {
			select {
			case err := <-done:
				done <- err // keep it for stop
				return StopTrying(fmt.Sprintf("run returned before it was ready: %v", err))
			default:
			}
			return get(ctx, "http://"+healthAddress+path)
		}).WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
	}
	return func() {
		t.Helper()
		cancel()
		// The bound only keeps a hung shutdown from hanging the suite.
		g.Eventually(done).WithTimeout(time.Minute).Should(Receive(BeNil()))
	}
}

func get(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}
