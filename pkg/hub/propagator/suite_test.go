package propagator_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/cmdutil"
	"github.com/canopy-policy/canopy/internal/scheme"
	"github.com/canopy-policy/canopy/internal/testenv"
	"github.com/canopy-policy/canopy/pkg/hub/propagator"
	"github.com/canopy-policy/canopy/pkg/hub/rootstatus"
)

// clusters are registered on the hub as names only: the propagator never
// talks to managed clusters.
var clusters = []string{"cluster-a", "cluster-b", "cluster-c"}

var (
	env *testenv.Env
	hub *testHub
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	logger := logr.Discard()
	if testing.Verbose() {
		logger = zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true))
	}
	ctrl.SetLogger(logger)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var err error
	if env, err = testenv.Start(ctx, testenv.Options{ManagedClusters: []string{}}); err != nil {
		fmt.Fprintln(os.Stderr, "starting the hub:", err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	if err := prepareHub(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "preparing the hub:", err)
		return 1
	}
	hub = newTestHub(env.Hub.Config)
	if err := hub.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "starting the hub controllers:", err)
		return 1
	}
	defer func() { _ = hub.Stop() }()
	return m.Run()
}

// prepareHub registers the managed clusters and relaxes the PlacementBinding
// schema as an older hub's would be, so that tests can create subjects of
// unknown kinds.
func prepareHub(ctx context.Context) error {
	for _, c := range clusters {
		if _, err := env.RegisterCluster(ctx, c); err != nil {
			return err
		}
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := env.Hub.Client.Get(ctx, client.ObjectKey{Name: "placementbindings.policy.open-cluster-management.io"}, crd); err != nil {
		return err
	}
	subject := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["subjects"].Items.Schema
	for _, field := range []string{"kind", "apiGroup"} {
		p := subject.Properties[field]
		p.Enum = nil
		subject.Properties[field] = p
	}
	return env.Hub.Client.Update(ctx, crd)
}

// testHub runs the hub's controllers in the test process, as cmd/hub wires
// them, and records every write they send to the API server.
type testHub struct {
	cfg    *rest.Config
	writes *writeLog

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan error
}

func newTestHub(cfg *rest.Config) *testHub {
	h := &testHub{cfg: rest.CopyConfig(cfg), writes: &writeLog{}}
	h.cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			h.writes.record(req)
			return rt.RoundTrip(req)
		})
	}
	return h
}

// Start starts a new manager with the hub controllers.
func (h *testHub) Start() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cancel != nil {
		return errors.New("the hub controllers are already running")
	}
	mgr, err := cmdutil.NewManager(h.cfg, manager.Options{
		Scheme: scheme.New(),
		Cache: cache.Options{
			DefaultTransform: cache.TransformStripManagedFields(),
			ByObject:         map[client.Object]cache.ByObject{&policyv1.Policy{}: {Transform: propagator.TrimPolicy}},
		},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)}, // restarted in one process
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	for _, c := range []interface {
		SetupWithManager(context.Context, ctrl.Manager) error
	}{
		&propagator.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("canopy-propagator"), MaxConcurrentReconciles: 2},
		&rootstatus.Reconciler{Client: mgr.GetClient(), MaxConcurrentReconciles: 2},
		&rootstatus.PolicySetReconciler{Client: mgr.GetClient()},
	} {
		if err := c.SetupWithManager(ctx, mgr); err != nil {
			cancel()
			return err
		}
	}
	h.cancel, h.done = cancel, make(chan error, 1)
	go func() { h.done <- mgr.Start(ctx) }()
	return nil
}

// Stop stops the manager and waits for it to return.
func (h *testHub) Stop() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cancel == nil {
		return nil
	}
	h.cancel()
	err := <-h.done
	h.cancel, h.done = nil, nil
	return err
}

// restart stops the hub controllers, runs while, and starts them again.
func restart(t *testing.T, while func()) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(hub.Stop()).To(Succeed())
	defer func() { g.Expect(hub.Start()).To(Succeed()) }()
	while()
}

// writeLog records the writes (every verb but GET) sent to the API server.
type writeLog struct {
	mu      sync.Mutex
	entries []string
}

func (w *writeLog) record(req *http.Request) {
	if req.Method == http.MethodGet || req.Method == http.MethodHead {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.entries = append(w.entries, req.Method+" "+req.URL.Path)
}

// Since returns the writes recorded after mark, and a new mark.
func (w *writeLog) Since(mark int) ([]string, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.entries[mark:]), len(w.entries)
}

// Mark returns the current position of the log.
func (w *writeLog) Mark() int {
	_, m := w.Since(0)
	return m
}

// Matching returns the writes after mark whose path contains every part.
func (w *writeLog) Matching(mark int, parts ...string) []string {
	all, _ := w.Since(mark)
	var out []string
	for _, e := range all {
		if containsAll(e, parts) {
			out = append(out, e)
		}
	}
	return out
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// metricValue returns the sum of the values of the series of a metric
// whose labels include labels.
func metricValue(name string, labels map[string]string) float64 {
	families, err := metrics.Registry.Gather()
	if err != nil {
		return -1
	}
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if hasLabels(m, labels) {
				sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
	}
	return sum
}

func hasLabels(m *dto.Metric, labels map[string]string) bool {
	found := 0
	for _, l := range m.GetLabel() {
		if v, ok := labels[l.GetName()]; ok && v == l.GetValue() {
			found++
		}
	}
	return found == len(labels)
}
