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

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/canopy-policy/canopy/internal/cmdutil"
	"github.com/canopy-policy/canopy/internal/scheme"
	"github.com/canopy-policy/canopy/pkg/agent/configpolicy"
	"github.com/canopy-policy/canopy/pkg/agent/hubconn"
	"github.com/canopy-policy/canopy/pkg/agent/lease"
	"github.com/canopy-policy/canopy/pkg/agent/statussync"
	"github.com/canopy-policy/canopy/pkg/agent/syncer"
	"github.com/canopy-policy/canopy/pkg/agent/templatesync"
	"github.com/canopy-policy/canopy/pkg/compliance"
)

// options are the agent's flags.
type options struct {
	serving       cmdutil.ServingOptions
	kubeconfig    string
	hubKubeconfig string
	clusterName   string
	// installNamespace is where the agent runs on the managed cluster.
	installNamespace string
	zap              *zap.Options
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
		ctrl.Log.Error(err, "Agent failed")
		os.Exit(1)
	}
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
	opts.zap = opts.serving.BindFlags(fs, ":8383", ":8384")
	if err := fs.Parse(args); err != nil {
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

// controller is what every controller of the agent is to run.
type controller interface {
	SetupWithManager(mgr ctrl.Manager) error
}

// managedControllers lists the controllers that work on the managed
// cluster, sharing one compliance event recorder so that they all see the
// same last event of each template.
func managedControllers(mgr ctrl.Manager) []controller {
	instance, err := os.Hostname() // the pod's name in a cluster
	if err != nil {
		instance = "canopy-agent"
	}
	recorder := compliance.NewRecorder(mgr.GetClient(), mgr.GetAPIReader(),
		compliance.EventSource{Component: "canopy-agent", Instance: instance})
	return []controller{
		&configpolicy.Reconciler{
			ManagedClient: mgr.GetClient(),
			ManagedReader: mgr.GetAPIReader(),
			Recorder:      recorder,
		},
		&templatesync.Reconciler{ManagedClient: mgr.GetClient(), Recorder: recorder},
		&statussync.Reconciler{ManagedClient: mgr.GetClient()},
		&syncer.Reconciler{ManagedClient: mgr.GetClient(), ManagedReader: mgr.GetAPIReader(), Recorder: recorder},
	}
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
	s := scheme.New()
	mgrOpts := manager.Options{Scheme: s, Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
		// Compliance events are written and read only in the cluster namespace.
		&corev1.Event{}: {Namespaces: map[string]cache.Config{opts.clusterName: {}}},
	}}}
	opts.serving.Apply(&mgrOpts)
	mgr, err := cmdutil.NewManager(managedCfg, mgrOpts)
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	// The hub has its own manager, its cache restricted to the cluster
	// namespace (the hub identity may read nothing else), run and retried
	// by hubconn so that an unreachable hub never stops local enforcement.
	// It runs specsync, statussync's hub side, secretsync (the encryption
	// key) and the lease.
	if err := mgr.Add(&hubconn.Runner{HubConfig: hubCfg, ClusterNamespace: opts.clusterName, Scheme: s, Managed: mgr}); err != nil {
		return fmt.Errorf("adding the hub connection: %w", err)
	}
	if err := addInstallLease(mgr, managedCfg, opts.installNamespace); err != nil {
		return err
	}
	for _, c := range managedControllers(mgr) {
		if err := c.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("setting up %T: %w", c, err)
		}
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

// addInstallLease renews the addon Lease in the agent's install namespace on
// the managed cluster, where OCM's klusterlet reads it to report the addon's
// health. Outside OCM there is no install namespace and no such Lease.
func addInstallLease(mgr manager.Manager, managedCfg *rest.Config, namespace string) error {
	if namespace == "" {
		return nil
	}
	writer, err := client.New(managedCfg, client.Options{Scheme: mgr.GetScheme()})
	if err != nil {
		return fmt.Errorf("creating the lease client: %w", err)
	}
	holder, err := os.Hostname() // the pod's name in a cluster
	if err != nil {
		holder = "canopy-agent"
	}
	return mgr.Add(&lease.Updater{Writer: writer, Namespace: namespace, Holder: holder})
}
