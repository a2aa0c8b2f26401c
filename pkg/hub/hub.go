package hub

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/scheme"
	"github.com/canopy-policy/canopy/pkg/controllerdefaults"
	"github.com/canopy-policy/canopy/pkg/history"
	"github.com/canopy-policy/canopy/pkg/hub/addon"
	"github.com/canopy-policy/canopy/pkg/hub/dashboard"
	hubhistory "github.com/canopy-policy/canopy/pkg/hub/history"
	"github.com/canopy-policy/canopy/pkg/hub/propagator"
	"github.com/canopy-policy/canopy/pkg/hub/rootstatus"
)

// Options choose what the hub runs. The zero value runs the propagator and
// the root and PolicySet status controllers, as cmd/hub does, without the
// addon manager and the dashboard.
type Options struct {
	// ConcurrentReconciles is how many roots (and policy sets) each
	// controller reconciles at once; zero means controllerdefaults.HubConcurrency.
	ConcurrentReconciles int
	// AddonManager runs the OCM addon manager, which installs the agent on
	// the clusters the addon is enabled for.
	AddonManager bool
	// Agent are the defaults of every agent the addon manager installs.
	Agent addon.Options
	// DashboardAddress is where the read-only dashboard listens; empty
	// means no dashboard.
	DashboardAddress string
	// DashboardRefresh is how often the dashboard's pages poll; zero means
	// dashboard.DefaultRefreshInterval. Tests shorten it.
	DashboardRefresh time.Duration
	// CoalesceWindow is how long the root status controller collects
	// replica changes before it recomputes a root; zero means
	// rootstatus.DefaultCoalesceWindow. Tests shorten it.
	CoalesceWindow time.Duration
	// HistoryDatabase is where compliance history is recorded: a SQLite
	// file path, or postgres://...; empty or "none" records none.
	HistoryDatabase string
	// HistoryRetention is how long compliance history is kept; zero means
	// history.DefaultRetention.
	HistoryRetention time.Duration
	// HubName is the hub's name in the compliance history.
	HubName string
	// Fleet makes the dashboard show every hub recording to the same
	// PostgreSQL HistoryDatabase (/fleet, /api/fleet); see dashboard.CheckFleet.
	Fleet bool
	// HubDeployment is the hub's own Deployment, on which the history
	// recorder sets its HistoryRecording condition; empty means none.
	HubDeployment types.NamespacedName
	// TemplateFuncDenylist are the template functions hub templates are
	// denied, besides those the template library always denies (OCM's
	// --template-function-denylist).
	TemplateFuncDenylist []string
}

// concurrency is ConcurrentReconciles with its default applied.
func (o Options) concurrency() int {
	return controllerdefaults.Concurrency(o.ConcurrentReconciles, controllerdefaults.HubConcurrency)
}

// CacheOptions keep the hub's cache lean: no managedFields anywhere and no
// compliance history of replicas (see propagator.TrimPolicy); readers that
// need the history, like the dashboard, use the API reader. Every hub
// manager uses them, so tests read the same trimmed objects production does.
func CacheOptions() cache.Options {
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&policyv1.Policy{}: {Transform: propagator.TrimPolicy},
		},
	}
}

// ManagerOptions are the manager options every hub manager starts from:
// Canopy's scheme, CacheOptions, and opts' concurrency as the default of
// any controller added beside Setup's. Callers add serving and leader
// election.
func ManagerOptions(opts Options) manager.Options {
	mo := manager.Options{Scheme: scheme.New(), Cache: CacheOptions()}
	mo.Controller.MaxConcurrentReconciles = opts.concurrency()
	return mo
}

// controller is what every hub controller provides.
type controller interface {
	SetupWithManager(ctx context.Context, mgr ctrl.Manager) error
}

// Setup adds every hub controller opts asks for to mgr, which should be
// built from ManagerOptions.
func Setup(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	if opts.Fleet {
		if err := dashboard.CheckFleet(opts.DashboardAddress, opts.HistoryDatabase); err != nil {
			return err
		}
	}
	for _, c := range controllers(mgr, opts) {
		if err := c.SetupWithManager(ctx, mgr); err != nil {
			return fmt.Errorf("setting up %T: %w", c, err)
		}
	}
	return nil
}

// controllers is the one list of the hub's controllers.
func controllers(mgr ctrl.Manager, opts Options) []controller {
	c, n := mgr.GetClient(), opts.concurrency()
	list := []controller{
		&propagator.Reconciler{
			Client:                  c,
			APIReader:               mgr.GetAPIReader(),
			Recorder:                mgr.GetEventRecorder("canopy-" + propagator.ControllerName),
			MaxConcurrentReconciles: n,
			TemplateFuncDenylist:    opts.TemplateFuncDenylist,
		},
		&rootstatus.Reconciler{Client: c, CoalesceWindow: opts.CoalesceWindow, MaxConcurrentReconciles: n},
		&rootstatus.PolicySetReconciler{Client: c, MaxConcurrentReconciles: n},
	}
	if opts.AddonManager {
		list = append(list, &addon.Manager{Options: opts.Agent})
	}
	if !history.Disabled(opts.HistoryDatabase) {
		list = append(list, &hubhistory.Recorder{
			Database: opts.HistoryDatabase, HubName: opts.HubName, Retention: opts.HistoryRetention, Deployment: opts.HubDeployment,
		})
	}
	if opts.DashboardAddress != "" {
		d := &dashboard.Server{Address: opts.DashboardAddress, RefreshInterval: opts.DashboardRefresh}
		if !history.Disabled(opts.HistoryDatabase) {
			d.History = dashboard.NewHistoryReader(opts.HistoryDatabase)
		}
		if opts.Fleet {
			d.Fleet = dashboard.NewFleetReader(opts.HistoryDatabase, cmp.Or(opts.HubName, hubhistory.DefaultHubName))
		}
		list = append(list, d)
	}
	return list
}
