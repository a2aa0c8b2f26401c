// Package agenttest runs the agent's controllers in a test process, wired
// as cmd/agent wires them: one manager for the managed cluster
// (templatesync, statussync and the evaluators the test adds, sharing one
// compliance Recorder) and hubconn's Runner for the hub side (specsync,
// statussync's HubReconciler, secretsync and the lease).
package agenttest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime/pprof"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/canopy-policy/canopy/internal/cmdutil"
	"github.com/canopy-policy/canopy/internal/scheme"
	"github.com/canopy-policy/canopy/pkg/agent/hubconn"
	"github.com/canopy-policy/canopy/pkg/agent/statussync"
	"github.com/canopy-policy/canopy/pkg/agent/templatesync"
	"github.com/canopy-policy/canopy/pkg/compliance"
)

// Options configures an agent.
type Options struct {
	// ManagedConfig connects to the managed cluster.
	ManagedConfig *rest.Config
	// HubConfig is the agent's hub identity.
	HubConfig *rest.Config
	// ClusterNamespace is the cluster's name and namespace.
	ClusterNamespace string
	// ClusterWideCache caches the managed cluster beyond the cluster
	// namespace, as the real agent does (evaluators need it). False
	// restricts it, so that agents of several test clusters can share one
	// managed API server.
	ClusterWideCache bool
	// Evaluators register policy template evaluators with the managed
	// manager, recording compliance through rec.
	Evaluators func(mgr ctrl.Manager, rec *compliance.Recorder) error
}

// Agent is a running agent.
type Agent struct {
	// Manager is the managed cluster's manager.
	Manager manager.Manager
	cancel  context.CancelFunc
	done    chan error
}

// Start starts an agent; it runs until Stop or until ctx ends.
func Start(ctx context.Context, opts Options) (*Agent, error) {
	s := scheme.New()
	mopts := manager.Options{
		Scheme:     s,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	}
	if !opts.ClusterWideCache {
		mopts.Cache.DefaultNamespaces = map[string]cache.Config{opts.ClusterNamespace: {}}
	}
	mgr, err := cmdutil.NewManager(opts.ManagedConfig, mopts)
	if err != nil {
		return nil, err
	}
	rec := compliance.NewRecorder(mgr.GetClient(), mgr.GetAPIReader(),
		compliance.EventSource{Component: "canopy-agent", Instance: opts.ClusterNamespace})
	ts := &templatesync.Reconciler{ManagedClient: mgr.GetClient(), Recorder: rec, Namespace: opts.ClusterNamespace}
	if err := ts.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	ss := &statussync.Reconciler{ManagedClient: mgr.GetClient(), Namespace: opts.ClusterNamespace}
	if err := ss.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	if opts.Evaluators != nil {
		if err := opts.Evaluators(mgr, rec); err != nil {
			return nil, fmt.Errorf("setting up evaluators: %w", err)
		}
	}
	hub := &hubconn.Runner{
		HubConfig: opts.HubConfig, ClusterNamespace: opts.ClusterNamespace, Scheme: s, Managed: mgr,
		RetryDelay: time.Second, LeaseInterval: time.Second,
	}
	if err := mgr.Add(hub); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	a := &Agent{Manager: mgr, cancel: cancel, done: make(chan error, 1)}
	go func() { a.done <- mgr.Start(ctx) }()
	return a, nil
}

// Stop stops the agent and waits for it. When a part of the agent does
// not stop, the error carries every goroutine's stack, to find which.
func (a *Agent) Stop() error {
	a.cancel()
	select {
	case err := <-a.done:
		if err == nil || errors.Is(err, context.Canceled) {
			return nil
		}
		return fmt.Errorf("%w\n%s", err, stacks())
	case <-time.After(time.Minute):
		return fmt.Errorf("the agent did not stop within a minute\n%s", stacks())
	}
}

func stacks() string {
	var b bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
	return b.String()
}
