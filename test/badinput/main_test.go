package badinput_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/canopy-policy/canopy/internal/test/olmsim"
	"github.com/canopy-policy/canopy/internal/test/testenv"
)

// clusterName is the one managed cluster of the corpus.
const clusterName = "cluster1"

// suite is a hub and one managed cluster.
var suite = &testenv.Suite{
	Options: testenv.Options{ManagedClusters: []string{clusterName}},
	Start: func(e *testenv.Env) (func() error, error) {
		env = e
		return startOLM(e.Managed[0])
	},
}

// startOLM installs OLM's CRDs on the managed cluster and runs the OLM
// simulator there (OLM cannot run here: see olmsim), with one package,
// corpus-op (channel stable, corpus-op.v1.0.0), in the CatalogSource
// corpus-catalog of namespace olm, for the OperatorPolicy cases.
func startOLM(mc *testenv.ManagedCluster) (func() error, error) {
	ctx, cancel := context.WithCancel(context.Background())
	if err := olmsim.Install(ctx, mc.Config, mc.Client); err != nil {
		cancel()
		return nil, err
	}
	if err := mc.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "olm"}}); err != nil {
		cancel()
		return nil, err
	}
	sim := &olmsim.Simulator{Client: mc.Client}
	err := sim.AddPackage(ctx, olmsim.Package{Name: "corpus-op", Catalog: "corpus-catalog", CatalogNamespace: "olm",
		DefaultChannel: "stable", Channels: map[string][]string{"stable": {"corpus-op.v1.0.0"}}, SuggestedNamespace: "corpus-op"})
	if err != nil {
		cancel()
		return nil, err
	}
	var wg sync.WaitGroup
	wg.Go(func() { sim.Run(ctx) })
	return func() error { cancel(); wg.Wait(); return nil }, nil
}

// env is the suite's Env, set when it starts: every test starts it first
// with suite.Get.
var env *testenv.Env

func TestMain(m *testing.M) {
	logger := logr.Discard()
	if os.Getenv("BADINPUT_LOG") != "" { // the controllers' logs, to debug a case
		logger = funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{})
	}
	ctrl.SetLogger(logger)
	suite.Main(m)
}
