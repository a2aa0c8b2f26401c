package spoke

import (
	"context"
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/canopy-policy/canopy/pkg/spoke/internal/clusterns"
	"github.com/canopy-policy/canopy/pkg/spoke/lease"
	"github.com/canopy-policy/canopy/pkg/spoke/secretsync"
	"github.com/canopy-policy/canopy/pkg/spoke/specsync"
	"github.com/canopy-policy/canopy/pkg/spoke/statussync"
)

// Defaults of Runner.
const (
	// DefaultRetryDelay is the pause before the hub manager is rebuilt.
	DefaultRetryDelay = 5 * time.Second
	// DefaultCacheSyncTimeout bounds the wait for the hub cache; after it,
	// the hub manager is rebuilt.
	//
	// Note: it is long on purpose. The hub informers retry on their own
	// until the hub answers, and each rebuild leaves the event handlers of
	// the failed attempt on the managed cache's informers (controller-runtime
	// never removes them), so rebuilding often during a long outage leaks.
	DefaultCacheSyncTimeout = 24 * time.Hour
)

// Runner runs the hub manager until its context ends, rebuilding it after
// each failure. It is a manager.Runnable of the main (managed) manager.
type Runner struct {
	// HubConfig connects to the hub as the agent.
	HubConfig *rest.Config
	// ClusterNamespace is the cluster's namespace on the hub.
	ClusterNamespace string
	// Scheme is the scheme of both clusters.
	Scheme *runtime.Scheme
	// Managed is the managed cluster (the main manager).
	Managed cluster.Cluster
	// LeaseInterval is the lease renewal period; zero means the default.
	LeaseInterval time.Duration
	// RetryDelay is the pause between attempts; zero means DefaultRetryDelay.
	RetryDelay time.Duration
	// CacheSyncTimeout: zero means DefaultCacheSyncTimeout.
	CacheSyncTimeout time.Duration
}

// NeedLeaderElection is false: the hub side runs in every agent instance.
func (r *Runner) NeedLeaderElection() bool { return false }

// Start runs the hub manager, rebuilding it after each failure, until ctx
// ends.
func (r *Runner) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("hub")
	for {
		err := r.runOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		log.Error(err, "Hub connection failed; retrying", "retryDelay", r.retryDelay())
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(r.retryDelay()):
		}
	}
}

func (r *Runner) runOnce(ctx context.Context) error {
	mgr, err := r.newManager()
	if err != nil {
		return err
	}
	if err := r.setup(mgr); err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// newManager builds the hub manager: cache restricted to the cluster
// namespace, no metrics or probes (the main manager serves those).
func (r *Runner) newManager() (manager.Manager, error) {
	timeout := r.CacheSyncTimeout
	if timeout == 0 {
		timeout = DefaultCacheSyncTimeout
	}
	mgr, err := ctrl.NewManager(r.HubConfig, manager.Options{
		Scheme:  r.Scheme,
		Logger:  ctrl.Log.WithName("hub"),
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache: cache.Options{
			DefaultNamespaces: map[string]cache.Config{r.ClusterNamespace: {}},
			DefaultTransform:  cache.TransformStripManagedFields(), // no agent controller reads them
		},
		Client: client.Options{Cache: &client.CacheOptions{Unstructured: false}},
		Controller: config.Controller{
			SkipNameValidation: ptr.To(true), // each attempt registers the same controllers again
			CacheSyncTimeout:   timeout,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the hub manager: %w", err)
	}
	return mgr, nil
}

func (r *Runner) setup(mgr manager.Manager) error {
	managedCache := r.Managed.GetCache()
	spec := &specsync.Reconciler{Clients: clusterns.Clients{HubClient: mgr.GetClient(), ManagedClient: r.Managed.GetClient(), ClusterNamespace: r.ClusterNamespace}}
	if err := spec.SetupWithManager(mgr, managedCache); err != nil {
		return fmt.Errorf("setting up specsync: %w", err)
	}
	status := &statussync.HubReconciler{Clients: clusterns.Clients{HubClient: mgr.GetClient(), ManagedClient: r.Managed.GetClient(), ClusterNamespace: r.ClusterNamespace}}
	if err := status.SetupWithManager(mgr, managedCache); err != nil {
		return fmt.Errorf("setting up statussync: %w", err)
	}
	if err := r.setupSecretSync(mgr); err != nil {
		return err
	}
	hubWriter, err := client.New(r.HubConfig, client.Options{Scheme: r.Scheme})
	if err != nil {
		return fmt.Errorf("creating the hub lease client: %w", err)
	}
	host, _ := os.Hostname()
	return mgr.Add(&lease.Updater{Writer: hubWriter, Namespace: r.ClusterNamespace, Holder: host, Interval: r.LeaseInterval})
}

// setupSecretSync adds secretsync to mgr. It reads the encryption key
// through caches of its own, on the hub and on the managed cluster, each
// holding that one Secret (started and stopped with mgr).
//
// Note: a controller's watch waits for its whole cache to sync. In the hub
// manager's cache, a key the agent may not read (a hub whose agent Role
// predates it) would hold specsync and statussync back with it.
func (r *Runner) setupSecretSync(mgr manager.Manager) error {
	hubKeys, err := secretsync.NewKeyCluster(r.HubConfig, r.Scheme, r.ClusterNamespace)
	if err != nil {
		return err
	}
	managedKeys, err := secretsync.NewKeyCluster(r.Managed.GetConfig(), r.Scheme, r.ClusterNamespace)
	if err != nil {
		return err
	}
	for _, c := range []cluster.Cluster{hubKeys, managedKeys} {
		if err := mgr.Add(c); err != nil {
			return fmt.Errorf("adding an encryption key cache: %w", err)
		}
	}
	sec := &secretsync.Reconciler{HubClient: hubKeys.GetClient(), ManagedClient: managedKeys.GetClient(), ClusterNamespace: r.ClusterNamespace}
	if err := sec.SetupWithManager(mgr, hubKeys.GetCache(), managedKeys.GetCache()); err != nil {
		return fmt.Errorf("setting up secretsync: %w", err)
	}
	return nil
}

func (r *Runner) retryDelay() time.Duration {
	if r.RetryDelay == 0 {
		return DefaultRetryDelay
	}
	return r.RetryDelay
}
