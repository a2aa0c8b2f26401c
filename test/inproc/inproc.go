package inproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/pprof"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/canopy-policy/canopy/pkg/compliance"
	"github.com/canopy-policy/canopy/pkg/hub"
	"github.com/canopy-policy/canopy/pkg/hub/addon"
	"github.com/canopy-policy/canopy/pkg/spoke"
)

// testInterval replaces, in RunAgent, the agent's retry delay and Lease
// period that a test would otherwise wait for.
const testInterval = time.Second

// stopTimeout bounds Stop: a manager still running after it has a part
// that ignores its context.
const stopTimeout = time.Minute

// HubOptions are the options of StartHub: the hub that ships, without the
// addon manager and the dashboard, with a short coalesce window so that
// root status follows replica status quickly.
func HubOptions() hub.Options {
	return hub.Options{CoalesceWindow: 100 * time.Millisecond}
}

// StartHub runs the hub controllers (HubOptions) against cfg until the test
// ends.
func StartHub(t testing.TB, cfg *rest.Config) {
	t.Helper()
	stop, err := StartHubControllers(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("hub manager: %v", err)
		}
	})
}

// StartHubControllers runs the hub controllers (HubOptions) against cfg
// until stop is called; StartHub for callers without a testing.TB (ginkgo
// specs).
func StartHubControllers(cfg *rest.Config) (stop func() error, _ error) {
	r, err := RunHub(context.Background(), cfg, HubOptions())
	if err != nil {
		return nil, err
	}
	return r.Stop, nil
}

// RunHub runs the hub as cmd/hub assembles it (hub.ManagerOptions and
// hub.Setup) against cfg, until Stop or until ctx ends.
func RunHub(ctx context.Context, cfg *rest.Config, opts hub.Options) (*Running, error) {
	mgr, err := newManager(cfg, hub.ManagerOptions(opts))
	if err != nil {
		return nil, err
	}
	if err := hub.Setup(ctx, mgr, opts); err != nil {
		return nil, err
	}
	return start(ctx, mgr), nil
}

// RunAddonManager runs only Canopy's addon manager (what cmd/hub runs with
// --addon-manager) against the hub cfg, until Stop or until ctx ends: a
// suite whose specs run the other hub controllers themselves keeps one
// addon manager for every spec.
func RunAddonManager(ctx context.Context, cfg *rest.Config, opts addon.Options) (*Running, error) {
	mgr, err := newManager(cfg, hub.ManagerOptions(hub.Options{}))
	if err != nil {
		return nil, err
	}
	if err := (&addon.Manager{Options: opts}).SetupWithManager(ctx, mgr); err != nil {
		return nil, err
	}
	return start(ctx, mgr), nil
}

// StartAgent runs the agent of cluster, connected to the managed cluster as
// managed and to the hub as hub, with the evaluators that ship, until the
// test ends.
func StartAgent(t testing.TB, cluster string, managed, hub *rest.Config) {
	t.Helper()
	a, err := RunAgent(context.Background(), managed, AgentOptions(cluster, hub))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := a.Stop(); err != nil {
			t.Errorf("agent: %v", err)
		}
	})
}

// AgentOptions are the options of StartAgent: the agent that ships, for
// cluster, reaching the hub as hub.
func AgentOptions(cluster string, hub *rest.Config) spoke.Options {
	return spoke.Options{HubConfig: hub, ClusterName: cluster}
}

// RunAgent runs the agent as cmd/spoke assembles it (spoke.ManagerOptions
// and spoke.Setup) against the managed cluster, until Stop or until ctx
// ends. Unlike cmd/spoke, it retries the hub and renews its Leases every
// second unless opts say otherwise, and names itself after its cluster.
func RunAgent(ctx context.Context, managed *rest.Config, opts spoke.Options) (*Running, error) {
	if opts.HubRetryDelay == 0 {
		opts.HubRetryDelay = testInterval
	}
	if opts.LeaseInterval == 0 {
		opts.LeaseInterval = testInterval
	}
	if opts.Instance == "" {
		opts.Instance = opts.ClusterName
	}
	mgr, err := newManager(managed, spoke.ManagerOptions(opts))
	if err != nil {
		return nil, err
	}
	if err := spoke.Setup(ctx, mgr, opts); err != nil {
		return nil, err
	}
	return start(ctx, mgr), nil
}

// StartEvaluators runs the agent's evaluators alone against the managed
// cluster (RunEvaluators) until the test ends.
func StartEvaluators(t testing.TB, managed *rest.Config, cluster string, logTo io.Writer) {
	t.Helper()
	r, err := RunEvaluators(context.Background(), managed, cluster, logTo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Stop(); err != nil {
			t.Errorf("evaluators: %v", err)
		}
	})
}

// RunEvaluators runs the agent's policy template evaluators alone
// (spoke.Evaluators, in a manager built from spoke.ManagerOptions for
// cluster) against the managed cluster, until Stop or until ctx ends: no hub
// connection and no spec, status or template sync. It is what OCM's
// config-policy-controller is without OCM's policy framework beside it, the
// way OCM's own tests of that controller run it (test/conformance). When
// logTo is set, the evaluators log there, as a controller's log file, in
// JSON lines; otherwise to the process's logger.
func RunEvaluators(ctx context.Context, managed *rest.Config, cluster string, logTo io.Writer) (*Running, error) {
	opts := spoke.ManagerOptions(spoke.Options{ClusterName: cluster})
	if logTo != nil {
		opts.Logger = zap.New(zap.WriteTo(logTo))
	}
	mgr, err := newManager(managed, opts)
	if err != nil {
		return nil, err
	}
	rec := compliance.NewRecorder(mgr.GetClient(), mgr.GetAPIReader(),
		compliance.EventSource{Component: spoke.Component, Instance: cluster})
	if err := spoke.Evaluators(mgr, rec); err != nil {
		return nil, err
	}
	return start(ctx, mgr), nil
}

// newManager builds a manager from the assembly's options, serving no
// metrics or probes and allowing the same controller names again: a test
// process runs several managers.
func newManager(cfg *rest.Config, opts manager.Options) (manager.Manager, error) {
	opts.Metrics = metricsserver.Options{BindAddress: "0"}
	opts.HealthProbeBindAddress = "0"
	opts.Controller.SkipNameValidation = ptr.To(true)
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	return mgr, nil
}

// Running is a manager running in the test process.
type Running struct {
	// Manager is the running manager; its client reads through the cache
	// the assembly configured.
	Manager manager.Manager
	cancel  context.CancelFunc
	done    chan error
	once    sync.Once
	err     error
}

// start starts mgr in the background.
func start(ctx context.Context, mgr manager.Manager) *Running {
	ctx, cancel := context.WithCancel(ctx)
	r := &Running{Manager: mgr, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- mgr.Start(ctx) }()
	return r
}

// Stop stops the manager and waits for it; calling it again returns the
// same result. When a part of the manager does not stop, the error carries
// every goroutine's stack, to find which.
func (r *Running) Stop() error {
	r.once.Do(func() { r.err = r.stop() })
	return r.err
}

func (r *Running) stop() error {
	r.cancel()
	select {
	case err := <-r.done:
		if err == nil || errors.Is(err, context.Canceled) {
			return nil
		}
		return fmt.Errorf("%w\n%s", err, stacks())
	case <-time.After(stopTimeout):
		return fmt.Errorf("the manager did not stop within %v\n%s", stopTimeout, stacks())
	}
}

func stacks() string {
	var b bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
	return b.String()
}
