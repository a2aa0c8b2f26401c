// Command agent is Canopy's process on a managed cluster (canopy-agent): it copies the
// cluster's policies and encryption key from the hub, creates their
// templates in dependency order, evaluates them, runs the hierarchical
// namespace syncer and reports compliance back to the hub.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/canopy-policy/canopy/internal/cmdutil"
	"github.com/canopy-policy/canopy/pkg/spoke"
	"github.com/canopy-policy/canopy/pkg/templating"
)

// options are the agent's flags.
type options struct {
	serving       cmdutil.ServingOptions
	kubeconfig    string
	hubKubeconfig string
	clusterName   string
	// installNamespace is where the agent runs on the managed cluster.
	installNamespace string
	// testClockOffset shifts the agent's clock, for tests only.
	testClockOffset time.Duration
	// denylist are the template functions managed templates are denied.
	denylist []string
	// operatorPolicyHistory bounds an OperatorPolicy's status.history.
	operatorPolicyHistory uint
	zap                   *zap.Options
}

func main() {
	cmdutil.Main(os.Args[1:], "Agent failed", parseFlags, func(o options) *zap.Options { return o.zap }, run)
}

func parseFlags(args []string) (options, error) {
	var opts options
	fs := flag.NewFlagSet("canopy-agent", flag.ContinueOnError)
	fs.StringVar(&opts.kubeconfig, "kubeconfig", "",
		"Kubeconfig of the managed cluster; empty means $KUBECONFIG or in-cluster.")
	fs.StringVar(&opts.hubKubeconfig, "hub-kubeconfig", "",
		"Kubeconfig of the agent's hub identity, which may only reach the cluster namespace (required).")
	fs.StringVar(&opts.clusterName, "cluster-name", "",
		"Name of this managed cluster on the hub, which is also its cluster namespace (required).")
	fs.StringVar(&opts.installNamespace, "install-namespace", os.Getenv("POD_NAMESPACE"),
		"Namespace the agent runs in on the managed cluster, where it renews the addon Lease OCM reads for its health; empty means no such Lease.")
	fs.DurationVar(&opts.testClockOffset, "test-clock-offset", 0,
		"A test knob, never for production: shifts the clock that stamps the agent's compliance reports by this much (for example -5m), to test a hub against an agent whose clock is wrong.")
	fs.Func(templating.DenylistFlag, templating.DenylistUsage, func(s string) error {
		opts.denylist = append(opts.denylist, templating.ParseFuncList(s)...)
		return nil
	})
	fs.UintVar(&opts.operatorPolicyHistory, "operator-policy-status-history-length", 10,
		"The maximum number of compliance history entries stored on the OperatorPolicy status (as OCM's flag).")
	opts.zap = opts.serving.BindFlags(fs, ":8383", ":8384")
	if err := cmdutil.ParseFlags(fs, args); err != nil {
		return opts, err
	}
	var errs []error
	if fs.NArg() > 0 {
		errs = append(errs, fmt.Errorf("unexpected arguments: %v", fs.Args()))
	}
	if opts.hubKubeconfig == "" {
		errs = append(errs, errors.New("--hub-kubeconfig is required"))
	}
	for _, msg := range validation.IsDNS1123Label(opts.clusterName) {
		errs = append(errs, fmt.Errorf("--cluster-name %q: %s", opts.clusterName, msg))
	}
	return opts, errors.Join(errs...)
}

// run starts the agent and blocks until ctx is cancelled.
func run(ctx context.Context, opts options) error {
	managedCfg, err := cmdutil.RESTConfig(opts.kubeconfig)
	if err != nil {
		return err
	}
	hubCfg, err := cmdutil.RESTConfig(opts.hubKubeconfig)
	if err != nil {
		return err
	}
	agentOpts := spoke.Options{
		HubConfig: hubCfg, ClusterName: opts.clusterName, InstallNamespace: opts.installNamespace,
		TemplateFuncDenylist: opts.denylist, OperatorPolicyHistoryLength: int(opts.operatorPolicyHistory),
	}
	if opts.testClockOffset != 0 {
		agentOpts.Clock = offsetClock{offset: opts.testClockOffset}
		ctrl.Log.Info("Agent clock offset for a test", "offset", opts.testClockOffset)
	}
	mgrOpts := spoke.ManagerOptions(agentOpts)
	opts.serving.Apply(&mgrOpts)
	mgr, err := ctrl.NewManager(managedCfg, mgrOpts)
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	if err := spoke.Setup(ctx, mgr, agentOpts); err != nil {
		return err
	}
	if err := cmdutil.AddProbes(mgr, map[string]cache.Cache{"managed": mgr.GetCache()}); err != nil {
		return err
	}
	ctrl.Log.Info("Starting agent", "cluster", opts.clusterName)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	return nil
}

// offsetClock is the machine's clock shifted by offset (--test-clock-offset).
type offsetClock struct {
	clock.RealClock
	offset time.Duration
}

// Now returns the machine's time shifted by the offset.
func (c offsetClock) Now() time.Time { return time.Now().Add(c.offset) }

// Since returns the time elapsed since t on the shifted clock.
func (c offsetClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
