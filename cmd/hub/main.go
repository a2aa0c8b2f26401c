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
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/canopy-policy/canopy/internal/cmdutil"
	"github.com/canopy-policy/canopy/internal/scheme"
)

// leaderElectionID names the Lease the hub replicas compete for.
const leaderElectionID = "canopy-hub.policy.open-cluster-management.io"

// options are the hub's flags.
type options struct {
	serving                 cmdutil.ServingOptions
	kubeconfig              string
	leaderElect             bool
	leaderElectionNamespace string
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
	opts.zap = opts.serving.BindFlags(fs, ":8080", ":8081")
	if err := fs.Parse(args); err != nil {
		return opts, err
	}
	if fs.NArg() > 0 {
		return opts, fmt.Errorf("unexpected arguments: %v", fs.Args())
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
		LeaderElection:          opts.leaderElect,
		LeaderElectionID:        leaderElectionID,
		LeaderElectionNamespace: opts.leaderElectionNamespace,
		// Note: releasing on cancel lets a new leader take over at once after
		// a graceful shutdown; run returns right after the manager stops.
		LeaderElectionReleaseOnCancel: true,
	}
	opts.serving.Apply(&mgrOpts)
	mgr, err := ctrl.NewManager(cfg, mgrOpts)
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	if err := cmdutil.AddProbes(mgr, map[string]cache.Cache{"hub": mgr.GetCache()}); err != nil {
		return err
	}
	ctrl.Log.Info("Starting hub controller", "leaderElection", opts.leaderElect)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	return nil
}
