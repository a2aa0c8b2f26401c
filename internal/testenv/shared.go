package testenv

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
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/canopy-policy/canopy/internal/cmdutil"
	"github.com/canopy-policy/canopy/internal/scheme"
)

// Shared is one control plane that the tests of a package share, with
// controllers running against it: the first test that asks for it starts
// it (unit and fuzz tests run without one), and Main stops it. Set
// CANOPY_TEST_LOG=1 to see the controllers' log.
type Shared struct {
	// Name names the control plane.
	Name string
	// Start starts what runs against the control plane; the func it returns
	// stops that.
	Start func(cfg *rest.Config) (stop func() error, err error)

	once sync.Once
	cp   *ControlPlane
	stop func() error
	err  error
}

// Get returns the running control plane, started on first use; it fails t
// when the control plane cannot start.
func (s *Shared) Get(t testing.TB) *ControlPlane {
	t.Helper()
	s.once.Do(s.start)
	if s.err != nil {
		t.Fatalf("starting the test environment: %v", s.err)
	}
	return s.cp
}

func (s *Shared) start() {
	out := io.Discard
	if os.Getenv("CANOPY_TEST_LOG") != "" {
		out = os.Stderr
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(out), zap.UseDevMode(true)))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp, err := StartControlPlane(ctx, s.Name)
	if err != nil {
		s.err = err
		return
	}
	stop, err := s.Start(cp.Config)
	if err != nil {
		s.err = errors.Join(err, cp.Stop())
		return
	}
	s.cp, s.stop = cp, stop
}

// Main runs the package's tests, then stops the control plane if a test
// started it: `func TestMain(m *testing.M) { shared.Main(m) }`.
func (s *Shared) Main(m *testing.M) {
	code := m.Run()
	if s.cp != nil {
		if err := errors.Join(s.stop(), s.cp.Stop()); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the test environment: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// StartManager runs a manager on cfg, with what setup registers, until the
// returned stop is called. It serves no metrics or probes, and allows the
// same controller names again (tests start several managers per process).
func StartManager(cfg *rest.Config, setup func(ctrl.Manager) error) (stop func() error, _ error) {
	mgr, err := cmdutil.NewManager(cfg, manager.Options{
		Scheme:                 scheme.New(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
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
