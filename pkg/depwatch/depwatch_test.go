package depwatch_test

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	depclient "github.com/stolostron/kubernetes-dependency-watches/client"

	"github.com/canopy-policy/canopy/pkg/depwatch"
)

// fakeWatcher stands for the dependency watcher: it starts, and stops when
// its context ends.
type fakeWatcher struct {
	depclient.DynamicWatcher
	started, stopped chan struct{}
}

func newFake() *fakeWatcher {
	return &fakeWatcher{started: make(chan struct{}), stopped: make(chan struct{})}
}

func (f *fakeWatcher) Started() <-chan struct{} { return f.started }

func (f *fakeWatcher) Start(ctx context.Context) error {
	close(f.started)
	<-ctx.Done()
	close(f.stopped)
	return nil
}

// run starts l as a manager would, until the returned cancel; done
// receives Start's result.
func run(l *depwatch.Lifecycle) (cancel func(), done <-chan error) {
	ctx, cancel := context.WithCancel(context.Background())
	d := make(chan error, 1)
	go func() { d <- l.Start(ctx) }()
	return cancel, d
}

func TestHoldWaitsForTheStart(t *testing.T) {
	g := NewWithT(t)
	w := newFake()
	l := depwatch.New(w)
	held := make(chan error, 1)
	go func() {
		release, err := l.Hold(t.Context())
		if err == nil {
			release()
		}
		held <- err
	}()
	g.Consistently(held, 100*time.Millisecond).ShouldNot(Receive(), "held before the start")
	cancel, done := run(l)
	g.Eventually(held).Should(Receive(BeNil()))
	cancel()
	g.Eventually(done).Should(Receive(BeNil()))
}

// TestShutdownWaitsForHolds: the watcher stops only once every hold is
// released; meanwhile new holds fail.
func TestShutdownWaitsForHolds(t *testing.T) {
	g := NewWithT(t)
	w := newFake()
	l := depwatch.New(w)
	cancel, done := run(l)
	release, err := l.Hold(t.Context())
	g.Expect(err).NotTo(HaveOccurred())

	cancel()
	g.Consistently(w.stopped, 200*time.Millisecond).ShouldNot(BeClosed(), "stopped under a hold")
	g.Consistently(done, 10*time.Millisecond).ShouldNot(Receive())

	release()
	g.Eventually(w.stopped).Should(BeClosed())
	g.Eventually(done).Should(Receive(BeNil()))
	_, err = l.Hold(t.Context())
	g.Expect(err).To(MatchError(depwatch.ErrStopped))
	g.Expect(errors.Is(err, context.Canceled)).To(BeTrue(), "ErrStopped is a cancellation")
	g.Expect(l.Start(context.Background())).NotTo(Succeed(), "a Lifecycle runs once")
}

func TestHoldEndsWithItsContext(t *testing.T) {
	g := NewWithT(t)
	l := depwatch.New(newFake())
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := l.Hold(ctx)
	g.Expect(err).To(MatchError(context.Canceled))
}

func TestTryHold(t *testing.T) {
	g := NewWithT(t)
	var none *depwatch.Lifecycle
	_, ok := none.TryHold()
	g.Expect(ok).To(BeFalse(), "nil Lifecycle")

	w := newFake()
	l := depwatch.New(w)
	_, ok = l.TryHold()
	g.Expect(ok).To(BeFalse(), "before the start")

	cancel, done := run(l)
	g.Eventually(w.started).Should(BeClosed())
	release, ok := l.TryHold()
	g.Expect(ok).To(BeTrue(), "running")
	release()

	cancel()
	g.Eventually(done).Should(Receive(BeNil()))
	_, ok = l.TryHold()
	g.Expect(ok).To(BeFalse(), "stopped")
}
