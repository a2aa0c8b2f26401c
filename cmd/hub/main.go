// Command hub is Canopy's hub controller: it distributes Policies and
// PolicySets to the managed clusters chosen by OCM Placements and aggregates
// their compliance back onto the root objects.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/cmdutil"
	"github.com/canopy-policy/canopy/internal/scheme"
	"github.com/canopy-policy/canopy/pkg/hub/addon"
	"github.com/canopy-policy/canopy/pkg/hub/dashboard"
	"github.com/canopy-policy/canopy/pkg/hub/propagator"
	"github.com/canopy-policy/canopy/pkg/hub/rootstatus"
)

// leaderElectionID names the Lease the hub replicas compete for.
const leaderElectionID = "canopy-hub.policy.open-cluster-management.io"

// options are the hub's flags.
type options struct {
	serving                 cmdutil.ServingOptions
	kubeconfig              string
	leaderElect             bool
	leaderElectionNamespace string
	concurrentReconciles    int
	addonManager            bool
	agent                   addon.Options
	dashboardAddress        string
	zap                     *zap.Options
}

func main() {
	opts, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	cmdutil.SetupLogger(opts.zap)
	if err := run(ctrl.SetupSignalHandler(), opts); err != nil {
		ctrl.Log.Error(err, "Hub controller failed")
		os.Exit(1)
	}
}

func parseFlags(args []string) (options, error) {
	var opts options
	fs := flag.NewFlagSet("canopy-hub", flag.ContinueOnError)
	fs.StringVar(&opts.kubeconfig, "kubeconfig", "",
		"Kubeconfig of the hub cluster; empty means $KUBECONFIG or in-cluster.")
	fs.BoolVar(&opts.leaderElect, "leader-elect", false,
		"Elect a leader so that only one of several hub replicas reconciles at a time.")
	fs.StringVar(&opts.leaderElectionNamespace, "leader-election-namespace", "",
		"Namespace of the leader election Lease; empty means the pod's own namespace.")
	fs.IntVar(&opts.concurrentReconciles, "concurrent-reconciles", 2,
		"How many root policies (and policy sets) each controller reconciles at once.")
	fs.BoolVar(&opts.addonManager, "addon-manager", true,
		"Run the OCM addon manager of canopy-policy, which installs the agent on the clusters the addon is enabled for.")
	fs.StringVar(&opts.agent.Image, "agent-image", addon.DefaultImage,
		"Agent image; an AddOnDeploymentConfig may override it per cluster (registries, customizedVariables Image).")
	fs.StringVar(&opts.agent.ImagePullPolicy, "agent-image-pull-policy", "IfNotPresent",
		"Agent imagePullPolicy: Always, IfNotPresent or Never (customizedVariables ImagePullPolicy overrides it).")
	fs.StringVar(&opts.agent.LogLevel, "agent-log-level", "info",
		"Agent --zap-log-level: debug, info, error or a positive integer (customizedVariables LogLevel overrides it).")
	fs.StringVar(&opts.dashboardAddress, "dashboard-address", "",
		"Address of the read-only compliance dashboard, e.g. 127.0.0.1:8090; empty means no dashboard.")
	opts.zap = opts.serving.BindFlags(fs, ":8080", ":8081")
	if err := fs.Parse(args); err != nil {
		return opts, err
	}
	if fs.NArg() > 0 {
		return opts, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if opts.concurrentReconciles < 1 {
		return opts, fmt.Errorf("--concurrent-reconciles must be at least 1, not %d", opts.concurrentReconciles)
	}
	return opts, nil
}

// run starts the hub manager and blocks until ctx is cancelled.
func run(ctx context.Context, opts options) error {
	cfg, err := cmdutil.RESTConfig(opts.kubeconfig)
	if err != nil {
		return err
	}
	mgrOpts := manager.Options{
		Scheme:                  scheme.New(),
		Cache:                   cacheOptions(),
		LeaderElection:          opts.leaderElect,
		LeaderElectionID:        leaderElectionID,
		LeaderElectionNamespace: opts.leaderElectionNamespace,
		// Note: releasing on cancel lets a new leader take over at once after
		// a graceful shutdown; run returns right after the manager stops.
		LeaderElectionReleaseOnCancel: true,
	}
	opts.serving.Apply(&mgrOpts)
	mgr, err := cmdutil.NewManager(cfg, mgrOpts)
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	if err := cmdutil.AddProbes(mgr, map[string]cache.Cache{"hub": mgr.GetCache()}); err != nil {
		return err
	}
	for _, c := range controllers(mgr, opts) {
		if err := c.SetupWithManager(ctx, mgr); err != nil {
			return fmt.Errorf("setting up %T: %w", c, err)
		}
	}
	ctrl.Log.Info("Starting hub controller", "leaderElection", opts.leaderElect)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	return nil
}

// controller is what every hub controller provides.
type controller interface {
	SetupWithManager(ctx context.Context, mgr ctrl.Manager) error
}

// controllers lists every controller the hub runs.
func controllers(mgr ctrl.Manager, opts options) []controller {
	c := mgr.GetClient()
	list := []controller{
		&propagator.Reconciler{
			Client:                  c,
			Recorder:                mgr.GetEventRecorder("canopy-" + propagator.ControllerName),
			MaxConcurrentReconciles: opts.concurrentReconciles,
		},
		&rootstatus.Reconciler{Client: c, MaxConcurrentReconciles: opts.concurrentReconciles},
		&rootstatus.PolicySetReconciler{Client: c, MaxConcurrentReconciles: opts.concurrentReconciles},
	}
	if opts.addonManager {
		list = append(list, &addon.Manager{Options: opts.agent})
	}
	if opts.dashboardAddress != "" {
		list = append(list, &dashboard.Server{Address: opts.dashboardAddress})
	}
	return list
}

// cacheOptions keeps the hub's cache lean: no managedFields anywhere, no
// compliance history of replicas (see propagator.TrimPolicy). Placements
// are cached as metadata only, by the propagator's watch.
func cacheOptions() cache.Options {
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&policyv1.Policy{}: {Transform: propagator.TrimPolicy},
		},
	}
}
