// Command hub is Canopy's hub controller: it distributes Policies and
// PolicySets to the managed clusters chosen by OCM Placements and aggregates
// their compliance back onto the root objects.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/canopy-policy/canopy/internal/cmdutil"
	"github.com/canopy-policy/canopy/pkg/controllerdefaults"
	"github.com/canopy-policy/canopy/pkg/history"
	"github.com/canopy-policy/canopy/pkg/hub"
	"github.com/canopy-policy/canopy/pkg/hub/addon"
	"github.com/canopy-policy/canopy/pkg/hub/dashboard"
	hubhistory "github.com/canopy-policy/canopy/pkg/hub/history"
	"github.com/canopy-policy/canopy/pkg/templating"
)

// leaderElectionID names the Lease the hub replicas compete for.
const leaderElectionID = "canopy-hub.policy.open-cluster-management.io"

// options are the hub's flags.
type options struct {
	serving                 cmdutil.ServingOptions
	kubeconfig              string
	leaderElect             bool
	leaderElectionNamespace string
	hub                     hub.Options
	hubDeployment           string
	zap                     *zap.Options
}

func main() {
	cmdutil.Main(os.Args[1:], "Hub controller failed", parseFlags, func(o options) *zap.Options { return o.zap }, run)
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
	fs.IntVar(&opts.hub.ConcurrentReconciles, "concurrent-reconciles", controllerdefaults.HubConcurrency,
		"How many root policies (and policy sets) each controller reconciles at once.")
	fs.BoolVar(&opts.hub.AddonManager, "addon-manager", true,
		"Run the OCM addon manager of canopy-policy, which installs the agent on the clusters the addon is enabled for.")
	fs.StringVar(&opts.hub.Agent.Image, "agent-image", addon.DefaultImage,
		"Agent image; an AddOnDeploymentConfig may override it per cluster (registries, customizedVariables Image).")
	fs.StringVar(&opts.hub.Agent.ImagePullPolicy, "agent-image-pull-policy", "IfNotPresent",
		"Agent imagePullPolicy: Always, IfNotPresent or Never (customizedVariables ImagePullPolicy overrides it).")
	fs.StringVar(&opts.hub.Agent.LogLevel, "agent-log-level", "info",
		"Agent --zap-log-level: debug, info, error or a positive integer (customizedVariables LogLevel overrides it).")
	fs.StringVar(&opts.hub.DashboardAddress, "dashboard-address", "",
		"Address of the read-only compliance dashboard, e.g. 127.0.0.1:8090; empty means no dashboard.")
	fs.StringVar(&opts.hub.HistoryDatabase, "history-database", "",
		"Where compliance history is recorded: a SQLite file path (deploy/hub sets /var/lib/canopy/history.db, on a PersistentVolumeClaim), or postgres://user@host/db for PostgreSQL (shared by several hubs); empty or none records no history.")
	fs.DurationVar(&opts.hub.HistoryRetention, "history-retention", history.DefaultRetention,
		"How long compliance history is kept; older days are deleted (on PostgreSQL, whole daily partitions are dropped).")
	fs.StringVar(&opts.hub.HubName, "hub-name", hubhistory.DefaultHubName,
		"This hub's name in the compliance history; give each hub writing to one PostgreSQL its own.")
	fs.BoolVar(&opts.hub.Fleet, "fleet", false,
		"Show in the dashboard (/fleet) the compliance of every cluster of every hub recording to the same PostgreSQL --history-database, grouped by hub, with each hub's data age.")
	fs.StringVar(&opts.hubDeployment, "hub-deployment", hubhistory.DeploymentName,
		"The hub's own Deployment, [namespace/]name (the namespace defaults to the pod's), on which the hub sets the HistoryRecording condition (and its Events) when compliance history cannot be recorded; none to set none.")
	fs.Func(templating.DenylistFlag, templating.DenylistUsage, func(s string) error {
		opts.hub.TemplateFuncDenylist = append(opts.hub.TemplateFuncDenylist, templating.ParseFuncList(s)...)
		return nil
	})
	opts.zap = opts.serving.BindFlags(fs, ":8080", ":8081")
	if err := cmdutil.ParseFlags(fs, args); err != nil {
		return opts, err
	}
	if fs.NArg() > 0 {
		return opts, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if opts.hub.HistoryRetention <= 0 {
		return opts, fmt.Errorf("--history-retention must be positive, not %s", opts.hub.HistoryRetention)
	}
	if opts.hub.Fleet {
		if err := dashboard.CheckFleet(opts.hub.DashboardAddress, opts.hub.HistoryDatabase); err != nil {
			return opts, err
		}
	}
	if opts.hub.ConcurrentReconciles < 1 {
		return opts, fmt.Errorf("--concurrent-reconciles must be at least 1, not %d", opts.hub.ConcurrentReconciles)
	}
	return opts, nil
}

// run starts the hub manager and blocks until ctx is cancelled.
func run(ctx context.Context, opts options) error {
	cfg, err := cmdutil.RESTConfig(opts.kubeconfig)
	if err != nil {
		return err
	}
	opts.hub.HubDeployment = hubDeployment(opts.hubDeployment, podNamespace())
	mgrOpts := hub.ManagerOptions(opts.hub)
	mgrOpts.LeaderElection = opts.leaderElect
	mgrOpts.LeaderElectionID = leaderElectionID
	mgrOpts.LeaderElectionNamespace = opts.leaderElectionNamespace
	// Note: releasing on cancel lets a new leader take over at once after
	// a graceful shutdown; run returns right after the manager stops.
	mgrOpts.LeaderElectionReleaseOnCancel = true
	opts.serving.Apply(&mgrOpts)
	mgr, err := ctrl.NewManager(cfg, mgrOpts)
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	if err := cmdutil.AddProbes(mgr, map[string]cache.Cache{"hub": mgr.GetCache()}); err != nil {
		return err
	}
	if err := hub.Setup(ctx, mgr, opts.hub); err != nil {
		return err
	}
	ctrl.Log.Info("Starting hub controller", "leaderElection", opts.leaderElect)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	return nil
}

// serviceAccountNamespace is where a pod finds its own namespace.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// podNamespace returns the namespace of the hub's pod, or "" outside a
// cluster.
func podNamespace() string {
	data, err := os.ReadFile(serviceAccountNamespace)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// hubDeployment resolves --hub-deployment: "namespace/name", or a name in
// the pod's namespace; none (or a name outside a pod) names no Deployment.
func hubDeployment(flag, podNamespace string) types.NamespacedName {
	if ns, name, ok := strings.Cut(flag, "/"); ok {
		return types.NamespacedName{Namespace: ns, Name: name}
	}
	if flag == "" || flag == "none" || podNamespace == "" {
		return types.NamespacedName{}
	}
	return types.NamespacedName{Namespace: podNamespace, Name: flag}
}
