package inproc

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/canopy-policy/canopy/internal/testenv"
	"github.com/canopy-policy/canopy/pkg/agent/configpolicy"
	"github.com/canopy-policy/canopy/pkg/agent/hubconn/agenttest"
	"github.com/canopy-policy/canopy/pkg/agent/syncer"
	"github.com/canopy-policy/canopy/pkg/compliance"
	"github.com/canopy-policy/canopy/pkg/hub/propagator"
	"github.com/canopy-policy/canopy/pkg/hub/rootstatus"
)

// StartHub runs the hub controllers (propagator, root and PolicySet status)
// against cfg until the test ends.
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

// StartHubControllers runs the hub controllers against cfg until stop is
// called; StartHub for callers without a testing.TB (ginkgo specs).
func StartHubControllers(cfg *rest.Config) (stop func() error, _ error) {
	return testenv.StartManager(cfg, func(mgr ctrl.Manager) error {
		c := mgr.GetClient()
		for _, r := range []interface {
			SetupWithManager(context.Context, ctrl.Manager) error
		}{
			&propagator.Reconciler{Client: c, Recorder: mgr.GetEventRecorder("canopy-propagator")},
			&rootstatus.Reconciler{Client: c, CoalesceWindow: 100 * time.Millisecond},
			&rootstatus.PolicySetReconciler{Client: c},
		} {
			if err := r.SetupWithManager(context.Background(), mgr); err != nil {
				return err
			}
		}
		return nil
	})
}

// StartAgent runs the agent of cluster, connected to the managed cluster as
// managed and to the hub as hub, with its evaluators (ConfigurationPolicy
// and the hierarchical syncer), until the test ends.
func StartAgent(t testing.TB, cluster string, managed, hub *rest.Config) {
	t.Helper()
	agent, err := agenttest.Start(context.Background(), AgentOptions(cluster, managed, hub))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := agent.Stop(); err != nil {
			t.Errorf("agent: %v", err)
		}
	})
}

// AgentOptions are the options of StartAgent: the agent of cluster with its
// evaluators, its cache cluster-wide.
func AgentOptions(cluster string, managed, hub *rest.Config) agenttest.Options {
	return agenttest.Options{
		ManagedConfig: managed, HubConfig: hub, ClusterNamespace: cluster, ClusterWideCache: true,
		Evaluators: func(mgr ctrl.Manager, rec *compliance.Recorder) error {
			cp := &configpolicy.Reconciler{ManagedClient: mgr.GetClient(), ManagedReader: mgr.GetAPIReader(), Recorder: rec}
			if err := cp.SetupWithManager(mgr); err != nil {
				return err
			}
			hp := &syncer.Reconciler{ManagedClient: mgr.GetClient(), ManagedReader: mgr.GetAPIReader(), Recorder: rec}
			return hp.SetupWithManager(mgr)
		},
	}
}
