package rootstatus_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/canopy-policy/canopy/internal/scheme"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/internal/test/testenv"
	"github.com/canopy-policy/canopy/pkg/hub"
	"github.com/canopy-policy/canopy/pkg/hub/rootstatus"
)

// coalesceWindow is generous so that a burst written by a slow, busy test
// machine still falls in one window.
const coalesceWindow = 2 * time.Second

// clusters are registered on the hub as names only.
var clusters = []string{"cluster-a", "cluster-b"}

// suite is a hub running only the status controllers, with the hub's cache
// options: the tests write what the propagator would (status.placement,
// replicas) themselves.
var suite = &testenv.Suite{Options: testenv.Options{ManagedClusters: []string{}}, Start: startControllers}

// env, agents and writes are the suite's, set when it starts: every test
// starts it first, with newNamespace or suite.Get.
var (
	env *testenv.Env
	// agents are the hub clients of the managed clusters' agents, by cluster.
	agents = map[string]client.Client{}
	// writes records the requests other than GET the controllers send.
	writes *controlplane.Writes
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

// startControllers registers the clusters and runs the root and PolicySet
// status controllers against the hub of e.
func startControllers(e *testenv.Env) (func() error, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range clusters {
		cfg, err := e.RegisterCluster(ctx, c)
		if err != nil {
			return nil, err
		}
		if agents[c], err = client.New(cfg, client.Options{Scheme: scheme.New()}); err != nil {
			return nil, err
		}
	}
	cfg, recorded := controlplane.RecordWrites(e.Hub.Config)
	env, writes = e, recorded
	return controlplane.StartManager(cfg, manager.Options{Cache: hub.CacheOptions()}, func(mgr ctrl.Manager) error {
		if err := (&rootstatus.Reconciler{Client: mgr.GetClient(), CoalesceWindow: coalesceWindow}).SetupWithManager(ctx, mgr); err != nil {
			return err
		}
		return (&rootstatus.PolicySetReconciler{Client: mgr.GetClient()}).SetupWithManager(ctx, mgr)
	})
}
