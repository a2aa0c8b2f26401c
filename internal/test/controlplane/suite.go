package controlplane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/canopy-policy/canopy/internal/scheme"
)

// StartBudget bounds the start of a test environment: several control
// planes may start at once on a small, busy machine.
const StartBudget = 3 * time.Minute

// Suite is one control plane that the tests of a package share, with what
// the package tests (its controllers) running against it. The first test
// that asks for it starts it, so unit and fuzz tests run without one; Main
// stops it. Set CANOPY_TEST_LOG=1 to see the controllers' log.
//
//	var suite = &controlplane.Suite{Name: "managed", Start: func(cp *controlplane.ControlPlane) (func() error, error) {
//		return controlplane.StartManager(cp.Config, manager.Options{}, (&Reconciler{...}).SetupWithManager)
//	}}
//
//	func TestMain(m *testing.M) { suite.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		c := suite.Get(t).Client
//		ns := controlplane.Namespace(t, c)
//		...
//	}
//
// internal/test/testenv's Suite is the same for tests that need a hub and managed
// clusters.
type Suite struct {
	// Name names the control plane.
	Name string
	// Start starts what runs against the control plane once it serves; the
	// func it returns stops that. Nil starts nothing.
	Start func(cp *ControlPlane) (stop func() error, err error)

	lazy Lazy[*ControlPlane]
}

// Get returns the running control plane, started on first use; it fails t
// when the control plane or Start fails.
func (s *Suite) Get(t testing.TB) *ControlPlane {
	t.Helper()
	return s.lazy.Get(t, func(ctx context.Context) (*ControlPlane, func() error, error) {
		cp, err := Start(ctx, s.Name)
		if err != nil {
			return nil, nil, err
		}
		stop := func() error { return nil }
		if s.Start != nil {
			if stop, err = s.Start(cp); err != nil {
				return nil, nil, errors.Join(err, cp.Stop())
			}
		}
		return cp, func() error { return errors.Join(stop(), cp.Stop()) }, nil
	})
}

// Main runs the package's tests, then stops the control plane if a test
// started it, and exits: `func TestMain(m *testing.M) { suite.Main(m) }`.
func (s *Suite) Main(m *testing.M) { s.lazy.Main(m) }

// Lazy is what a suite shares: started by the first test that asks for it
// and stopped by Main. It is the engine of Suite and of internal/test/testenv's
// Suite; test packages use those.
type Lazy[T any] struct {
	once    sync.Once
	started bool
	val     T
	stop    func() error
	err     error
}

// Get returns the value, calling start on first use with a context bounded
// by StartBudget; it fails t when start failed. Before start it sets
// controller-runtime's logger with SetTestLogger.
//
// Note: controller-runtime keeps the first logger it is given: a package
// that wants another logger sets it in TestMain, before Main.
func (l *Lazy[T]) Get(t testing.TB, start func(ctx context.Context) (T, func() error, error)) T {
	t.Helper()
	l.once.Do(func() {
		SetTestLogger()
		ctx, cancel := context.WithTimeout(context.Background(), StartBudget)
		defer cancel()
		l.val, l.stop, l.err = start(ctx)
		l.started = l.err == nil
	})
	if l.err != nil {
		t.Fatalf("starting the test environment: %v", l.err)
	}
	return l.val
}

// Main runs m's tests, then stops the value if a test started it, and
// exits; a failure to stop fails the run.
func (l *Lazy[T]) Main(m *testing.M) {
	code := m.Run()
	if l.started {
		if err := l.stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the test environment: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// SetTestLogger sets controller-runtime's logger for tests: it discards
// everything unless CANOPY_TEST_LOG is set, then writes to stderr.
func SetTestLogger() {
	out := io.Discard
	if os.Getenv("CANOPY_TEST_LOG") != "" {
		out = os.Stderr
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(out), zap.UseDevMode(true)))
}

// StartManager runs a manager on cfg, built from opts (Canopy's scheme when
// opts has none), with what setup registers, until the returned stop is
// called. It serves no metrics or probes, and allows the same controller
// names again (tests start several managers per process).
func StartManager(cfg *rest.Config, opts manager.Options, setup func(ctrl.Manager) error) (stop func() error, _ error) {
	if opts.Scheme == nil {
		opts.Scheme = scheme.New()
	}
	opts.Metrics = metricsserver.Options{BindAddress: "0"}
	opts.HealthProbeBindAddress = "0"
	opts.Controller.SkipNameValidation = ptr.To(true)
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return nil, err
	}
	if err := setup(mgr); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() error {
		cancel()
		return <-done
	}, nil
}

// ForTest starts a control plane for one test and stops it when the test
// ends; use it when the test changes what a Suite's tests share (the
// cluster-wide objects, the API server's life).
func ForTest(t testing.TB, name string) *ControlPlane {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), StartBudget)
	defer cancel()
	cp, err := Start(ctx, name)
	if err != nil {
		t.Fatalf("starting control plane %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Errorf("stopping control plane %s: %v", name, err)
		}
	})
	return cp
}
