package inproc

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/canopy-policy/canopy/internal/cmdutil"
	"github.com/canopy-policy/canopy/internal/scheme"
	"github.com/canopy-policy/canopy/pkg/compliance"
	"github.com/canopy-policy/canopy/pkg/hub/propagator"
	"github.com/canopy-policy/canopy/pkg/hub/rootstatus"
	"github.com/canopy-policy/canopy/pkg/spoke/configpolicy"
	"github.com/canopy-policy/canopy/pkg/spoke/hubconn/agenttest"
	"github.com/canopy-policy/canopy/pkg/spoke/syncer"
)

// StartHub runs the hub controllers (propagator, root and PolicySet status)
// against cfg until the test ends.
func StartHub(t testing.TB, cfg *rest.Config) {
	t.Helper()
	mgr, err := cmdutil.NewManager(cfg, manager.Options{
		Scheme:     scheme.New(),
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := mgr.GetClient()
	for _, r := range []interface {
		SetupWithManager(context.Context, ctrl.Manager) error
	}{
		&propagator.Reconciler{Client: c, Recorder: mgr.GetEventRecorder("canopy-propagator")},
		&rootstatus.Reconciler{Client: c, CoalesceWindow: 100 * time.Millisecond},
		&rootstatus.PolicySetReconciler{Client: c},
	} {
		if err := r.SetupWithManager(ctx, mgr); err != nil {
			cancel()
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("hub manager: %v", err)
		}
	})
}

// StartAgent runs the agent of cluster, connected to the managed cluster as
// managed and to the hub as hub, with its evaluators (ConfigurationPolicy
// and the hierarchical syncer), until the test ends.
func StartAgent(t testing.TB, cluster string, managed, hub *rest.Config) {
	t.Helper()
	agent, err := agenttest.Start(context.Background(), agenttest.Options{
		ManagedConfig: managed, HubConfig: hub, ClusterNamespace: cluster, ClusterWideCache: true,
		Evaluators: func(mgr ctrl.Manager, rec *compliance.Recorder) error {
			cp := &configpolicy.Reconciler{ManagedClient: mgr.GetClient(), ManagedReader: mgr.GetAPIReader(), Recorder: rec}
			if err := cp.SetupWithManager(mgr); err != nil {
				return err
			}
			hp := &syncer.Reconciler{ManagedClient: mgr.GetClient(), ManagedReader: mgr.GetAPIReader(), Recorder: rec}
			return hp.SetupWithManager(mgr)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := agent.Stop(); err != nil {
			t.Errorf("agent: %v", err)
		}
	})
}
