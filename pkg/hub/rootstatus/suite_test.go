package rootstatus_test

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/cmdutil"
	"github.com/canopy-policy/canopy/internal/scheme"
	"github.com/canopy-policy/canopy/internal/testenv"
	"github.com/canopy-policy/canopy/pkg/hub/propagator"
	"github.com/canopy-policy/canopy/pkg/hub/rootstatus"
)

// coalesceWindow is generous so that a burst written by a slow, busy test
// machine still falls in one window.
const coalesceWindow = 2 * time.Second

var (
	env *testenv.Env
	// agents are the hub clients of the managed clusters' agents, by cluster.
	agents = map[string]client.Client{}
	// writes records the requests other than GET the controllers send.
	writes = &writeLog{}
)

// clusters are registered on the hub as names only.
var clusters = []string{"cluster-a", "cluster-b"}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runSuite(m))
}

// runSuite starts a hub running only the status controllers: the tests
// write what the propagator would (status.placement, replicas) themselves.
func runSuite(m *testing.M) int {
	logger := logr.Discard()
	if testing.Verbose() {
		logger = zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true))
	}
	ctrl.SetLogger(logger)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var err error
	if env, err = testenv.Start(ctx, testenv.Options{ManagedClusters: []string{}}); err != nil {
		fmt.Fprintln(os.Stderr, "starting the hub:", err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	for _, c := range clusters {
		cfg, err := env.RegisterCluster(ctx, c)
		if err == nil {
			agents[c], err = client.New(cfg, client.Options{Scheme: scheme.New()})
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "registering", c, err)
			return 1
		}
	}
	done, err := startControllers(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the controllers:", err)
		return 1
	}
	defer func() { cancel(); <-done }()
	return m.Run()
}

func startControllers(ctx context.Context) (<-chan error, error) {
	cfg := rest.CopyConfig(env.Hub.Config)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			writes.record(req)
			return rt.RoundTrip(req)
		})
	}
	mgr, err := cmdutil.NewManager(cfg, manager.Options{
		Scheme: scheme.New(),
		Cache: cache.Options{
			DefaultTransform: cache.TransformStripManagedFields(),
			ByObject:         map[client.Object]cache.ByObject{&policyv1.Policy{}: {Transform: propagator.TrimPolicy}},
		},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return nil, err
	}
	if err := (&rootstatus.Reconciler{Client: mgr.GetClient(), CoalesceWindow: coalesceWindow}).SetupWithManager(ctx, mgr); err != nil {
		return nil, err
	}
	if err := (&rootstatus.PolicySetReconciler{Client: mgr.GetClient()}).SetupWithManager(ctx, mgr); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return done, nil
}

// writeLog records the writes (every verb but GET) sent to the API server.
type writeLog struct {
	mu      sync.Mutex
	entries []string
}

func (w *writeLog) record(req *http.Request) {
	if req.Method == http.MethodGet {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.entries = append(w.entries, req.Method+" "+req.URL.Path)
}

// Mark returns the current position of the log.
func (w *writeLog) Mark() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.entries)
}

// Matching returns the writes after mark whose path ends with suffix.
func (w *writeLog) Matching(mark int, suffix string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, e := range w.entries[mark:] {
		if strings.HasSuffix(e, suffix) {
			out = append(out, e)
		}
	}
	return out
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
