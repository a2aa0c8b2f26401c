package ops_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/internal/test/olmsim"
	"github.com/canopy-policy/canopy/internal/test/testenv"
	"github.com/canopy-policy/canopy/test/inproc"
)

const (
	// clusterName is the one managed cluster of the fleet.
	clusterName = "cluster1"
	// fleetNamespace is the hub namespace of testdata/fleet.yaml.
	fleetNamespace = "ops"
	// eventually bounds the waits for the fleet to settle.
	eventually = 3 * time.Minute
	// poll is the interval of those waits.
	poll = 250 * time.Millisecond
)

// suite is the fleet: a hub and cluster1, with Canopy's hub and agent
// running and testdata/fleet.yaml applied.
var suite = &testenv.Suite{
	Options: testenv.Options{ManagedClusters: []string{clusterName}},
	Start:   startFleet,
}

// env is the suite's Env once a test has started it with suite.Get.
var env *testenv.Env

func TestMain(m *testing.M) {
	if os.Getenv("OPS_LOG") != "" { // the controllers' logs, to debug a test
		ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
	} else {
		controlplane.SetTestLogger()
	}
	suite.Main(m)
}

// startFleet runs OLM's simulator on the managed cluster (with the package
// the operator policies install), the hub and the agent, and applies
// testdata/fleet.yaml to the hub namespace fleetNamespace with its
// Placement deciding cluster1.
func startFleet(e *testenv.Env) (func() error, error) {
	env = e
	ctx, cancel := context.WithCancel(context.Background())
	var stops []func() error
	stop := func() error {
		cancel()
		var errs []error
		for i := len(stops) - 1; i >= 0; i-- {
			errs = append(errs, stops[i]())
		}
		return errors.Join(errs...)
	}
	fail := func(err error) (func() error, error) { return nil, errors.Join(err, stop()) }

	mc := e.Cluster(clusterName)
	olmStop, err := startOLM(ctx, mc)
	if err != nil {
		return fail(err)
	}
	stops = append(stops, olmStop)
	hub, err := inproc.RunHub(ctx, e.Hub.Config, inproc.HubOptions())
	if err != nil {
		return fail(fmt.Errorf("starting the hub: %w", err))
	}
	stops = append(stops, hub.Stop)
	agent, err := inproc.RunAgent(ctx, mc.Config, inproc.AgentOptions(clusterName, mc.HubConfig))
	if err != nil {
		return fail(fmt.Errorf("starting the agent: %w", err))
	}
	stops = append(stops, agent.Stop)
	if err := applyFleet(ctx, e); err != nil {
		return fail(err)
	}
	return stop, nil
}

// startOLM installs OLM's CRDs on the managed cluster and runs the OLM
// simulator there with one package, ops-op (channel stable, ops-op.v1.0.0),
// in the CatalogSource ops-catalog of namespace olm.
func startOLM(ctx context.Context, mc *testenv.ManagedCluster) (func() error, error) {
	if err := olmsim.Install(ctx, mc.Config, mc.Client); err != nil {
		return nil, fmt.Errorf("installing OLM's CRDs: %w", err)
	}
	if err := mc.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "olm"}}); err != nil {
		return nil, fmt.Errorf("creating namespace olm: %w", err)
	}
	sim := &olmsim.Simulator{Client: mc.Client}
	err := sim.AddPackage(ctx, olmsim.Package{Name: "ops-op", Catalog: "ops-catalog", CatalogNamespace: "olm",
		DefaultChannel: "stable", Channels: map[string][]string{"stable": {"ops-op.v1.0.0"}}, SuggestedNamespace: "ops-op"})
	if err != nil {
		return nil, fmt.Errorf("adding the package: %w", err)
	}
	simCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { sim.Run(simCtx) })
	return func() error { cancel(); wg.Wait(); return nil }, nil
}

// applyFleet creates fleetNamespace and the objects of testdata/fleet.yaml
// in it on the hub, and makes Placement "all" decide cluster1 and "ghost"
// a cluster the hub does not have.
func applyFleet(ctx context.Context, e *testenv.Env) error {
	if err := e.Hub.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fleetNamespace}}); err != nil {
		return fmt.Errorf("creating namespace %s: %w", fleetNamespace, err)
	}
	objs, err := readManifests("testdata/fleet.yaml")
	if err != nil {
		return err
	}
	for _, obj := range objs {
		obj.SetNamespace(fleetNamespace)
		if err := e.Hub.Client.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	if err := e.SetPlacementDecisions(ctx, fleetNamespace, "all", clusterName); err != nil {
		return err
	}
	return e.SetPlacementDecisions(ctx, fleetNamespace, "ghost", "ghost")
}

// readManifests reads the objects of a multi-document YAML file.
func readManifests(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		if len(obj.Object) > 0 {
			objs = append(objs, obj)
		}
	}
}
