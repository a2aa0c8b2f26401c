package propagator_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/internal/test/testenv"
	"github.com/canopy-policy/canopy/pkg/hub"
)

// clusters are registered on the hub as names only: the propagator never
// talks to managed clusters.
var clusters = []string{"cluster-a", "cluster-b", "cluster-c"}

// suite is a hub, without managed clusters, running the hub's controllers
// as cmd/hub does (pkg/hub).
var suite = &testenv.Suite{Options: testenv.Options{ManagedClusters: []string{}}, Start: startHub}

// deniedFunction is the template function the suite's hub denies, as
// cmd/hub's --template-function-denylist would; no other test calls it.
const deniedFunction = "sha1sum"

// env and runningHub are the suite's, set when it starts: every test starts it
// first, with newNamespace or suite.Get.
var (
	env        *testenv.Env
	runningHub *testHub
)

func TestMain(m *testing.M) {
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	suite.Main(m)
}

// newNamespace starts the suite if it is not running and returns a new
// namespace on the hub for t.
func newNamespace(t *testing.T) string {
	t.Helper()
	return controlplane.Namespace(t, suite.Get(t).Hub.Client)
}

func startHub(e *testenv.Env) (func() error, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := prepareHub(ctx, e); err != nil {
		return nil, err
	}
	env, runningHub = e, newTestHub(e.Hub.Config)
	if err := runningHub.Start(); err != nil {
		return nil, err
	}
	return runningHub.Stop, nil
}

// prepareHub registers the managed clusters and relaxes the PlacementBinding
// schema as an older hub's would be, so that tests can create subjects of
// unknown kinds.
func prepareHub(ctx context.Context, e *testenv.Env) error {
	for _, c := range clusters {
		if _, err := e.RegisterCluster(ctx, c); err != nil {
			return err
		}
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := e.Hub.Client.Get(ctx, client.ObjectKey{Name: "placementbindings.policy.open-cluster-management.io"}, crd); err != nil {
		return err
	}
	subject := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["subjects"].Items.Schema
	for _, field := range []string{"kind", "apiGroup"} {
		p := subject.Properties[field]
		p.Enum = nil
		subject.Properties[field] = p
	}
	return e.Hub.Client.Update(ctx, crd)
}

// testHub runs the hub's controllers in the test process, as cmd/hub wires
// them (pkg/hub), and records every write they send to the API server.
type testHub struct {
	cfg    *rest.Config
	writes *controlplane.Writes

	mu   sync.Mutex
	stop func() error // nil while stopped
}

func newTestHub(cfg *rest.Config) *testHub {
	cfg, writes := controlplane.RecordWrites(cfg)
	return &testHub{cfg: cfg, writes: writes}
}

// Start starts a new manager with the hub controllers.
func (h *testHub) Start() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stop != nil {
		return errors.New("the hub controllers are already running")
	}
	opts := hub.Options{TemplateFuncDenylist: []string{deniedFunction}}
	stop, err := controlplane.StartManager(h.cfg, hub.ManagerOptions(opts), func(mgr ctrl.Manager) error {
		return hub.Setup(context.Background(), mgr, opts)
	})
	if err != nil {
		return err
	}
	h.stop = stop
	return nil
}

// Stop stops the manager and waits for it to return.
func (h *testHub) Stop() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stop == nil {
		return nil
	}
	err := h.stop()
	h.stop = nil
	return err
}

// restart stops the hub controllers, runs while, and starts them again.
func restart(t *testing.T, while func()) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(runningHub.Stop()).To(Succeed())
	defer func() { g.Expect(runningHub.Start()).To(Succeed()) }()
	while()
}

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
