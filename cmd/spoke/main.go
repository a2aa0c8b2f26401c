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

	"k8s.io/apimachinery/pkg/util/validation"
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
	// denylist are the template functions managed templates are denied.
	denylist []string
	zap      *zap.Options
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
	fs.Func(templating.DenylistFlag, templating.DenylistUsage, func(s string) error {
		opts.denylist = append(opts.denylist, templating.ParseFuncList(s)...)
		return nil
	})
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
		TemplateFuncDenylist: opts.denylist,
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
