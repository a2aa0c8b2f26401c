package testenv

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	rbacv1 "k8s.io/api/rbac/v1"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/canopy-policy/canopy/internal/test/controlplane"
)

// HubName is the name of the hub's control plane and kubeconfig (hub.kubeconfig).
const HubName = "hub"

// DefaultManagedClusters are the managed clusters Start starts when
// Options.ManagedClusters is nil.
var DefaultManagedClusters = []string{"cluster1", "cluster2"}

// Options configures Start.
type Options struct {
	// ManagedClusters names the managed clusters, each its own API server
	// registered on the hub. Nil means DefaultManagedClusters; an empty,
	// non-nil slice means a hub alone.
	ManagedClusters []string
	// Dir receives the kubeconfigs (hub.kubeconfig, <cluster>.kubeconfig,
	// <cluster>-hub.kubeconfig) and, under state/, the control planes' data,
	// removed on Stop. Empty means a new temporary directory, removed on Stop.
	Dir string
	// AuditLog makes every API server log every write, with the deleted
	// object for deletions (ControlPlane.ReadAuditLog).
	AuditLog bool
	// Unregistered leaves the managed clusters unknown to the hub: no
	// ManagedCluster, cluster namespace or agent identity, and ManagedCluster
	// has no hub fields. They join as OCM's agents make them
	// (internal/test/ocmagents.Join), or with RegisterCluster.
	Unregistered bool
}

// Env is a hub and its managed clusters.
type Env struct {
	// Hub is the hub cluster.
	Hub *controlplane.ControlPlane
	// Managed are the managed clusters, in the order they were asked for.
	Managed []*ManagedCluster
	// Dir holds the kubeconfigs.
	Dir string

	ownsDir  bool   // remove Dir on Stop
	state    string // claimed state directory, removed on Stop
	identity func(ctx context.Context, cluster string) (*rest.Config, rbacv1.Subject, error)
	stopOnce sync.Once
	stopErr  error

	bgMu       sync.Mutex
	background []*background // what Background started, stopped first on Stop
	bgStopped  bool          // Stop has stopped background
}

// ManagedCluster is a managed cluster's API server and the agent's view of
// the hub.
type ManagedCluster struct {
	*controlplane.ControlPlane
	// HubConfig is the agent's hub identity, allowed only what
	// pkg/hubrbac grants in the cluster namespace (named Name).
	HubConfig *rest.Config
	// HubClient is a client for HubConfig.
	HubClient client.Client
	// HubKubeconfigPath names a kubeconfig file equivalent to HubConfig.
	HubKubeconfigPath string
}

// Start starts a hub and the managed clusters of opts, all at once, and
// registers each managed cluster on the hub (see RegisterCluster). On error
// nothing is left running.
func Start(ctx context.Context, opts Options) (_ *Env, retErr error) {
	names := opts.ManagedClusters
	if names == nil {
		names = DefaultManagedClusters
	}
	if err := validateNames(names); err != nil {
		return nil, err
	}
	controlplane.Sweep()
	e, err := newEnv(opts.Dir)
	if err != nil {
		return nil, err
	}
	controlplane.Track(e, e.Stop)
	defer func() {
		if retErr != nil {
			retErr = errors.Join(retErr, e.Stop())
		}
	}()
	state := filepath.Join(e.Dir, controlplane.StateDirName)
	if err := controlplane.ClaimStateDir(state); err != nil {
		return nil, err
	}
	e.state = state
	e.identity = e.certificateIdentity
	if err := e.startPlanes(ctx, names, opts); err != nil {
		return nil, err
	}
	return e, nil
}

// startPlanes starts the hub and the managed clusters' control planes in
// parallel and registers every cluster on the hub as soon as the hub is up.
// Every plane started stays reachable by Stop, even when another fails.
func (e *Env) startPlanes(ctx context.Context, names []string, opts Options) error {
	planes := make([]*controlplane.ControlPlane, len(names))
	e.Managed = make([]*ManagedCluster, len(names))
	audit := opts.AuditLog
	var g errgroup.Group
	g.Go(func() error {
		hub, err := e.startPlane(ctx, HubName, audit)
		if err != nil {
			return err
		}
		e.Hub = hub
		if opts.Unregistered {
			return nil
		}
		var reg errgroup.Group // registration needs only the hub: overlap it with the clusters' start
		for i, name := range names {
			reg.Go(func() error {
				return retried(ctx, func() (err error) {
					e.Managed[i], err = e.register(ctx, name)
					return err
				})
			})
		}
		return reg.Wait()
	})
	for i, name := range names {
		g.Go(func() (err error) {
			planes[i], err = e.startPlane(ctx, name, audit)
			return err
		})
	}
	err := g.Wait()
	for i, cp := range planes {
		if e.Managed[i] == nil {
			e.Managed[i] = &ManagedCluster{}
		}
		e.Managed[i].ControlPlane = cp
	}
	if err != nil {
		return err
	}
	for i, cp := range planes {
		if err := retried(ctx, func() error { return ensureClusterClaims(ctx, cp.Client, names[i]) }); err != nil {
			return err
		}
	}
	return nil
}

// startPlane starts the control plane name, its state under the Env's state
// directory and its kubeconfig at Dir/<name>.kubeconfig.
func (e *Env) startPlane(ctx context.Context, name string, audit bool) (*controlplane.ControlPlane, error) {
	return controlplane.StartIn(ctx, name, controlplane.Options{
		StateDir: e.state, KubeconfigPath: filepath.Join(e.Dir, name+".kubeconfig"), AuditLog: audit,
	})
}

// FromKubeconfigs connects to existing clusters instead of starting control
// planes, for example kind clusters: hub names the hub's kubeconfig, managed
// maps each managed cluster's name to its kubeconfig. It installs the CRDs
// and admission policies each cluster lacks, and registers the managed
// clusters on the hub like Start, except that each agent's hub identity is
// the ServiceAccount canopy-agent in its cluster namespace, with a token from
// the TokenRequest API. Stop leaves the clusters and what was installed.
func FromKubeconfigs(ctx context.Context, hub string, managed map[string]string) (_ *Env, retErr error) {
	names := slices.Sorted(maps.Keys(managed))
	if err := validateNames(names); err != nil {
		return nil, err
	}
	e, err := newEnv("")
	if err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			retErr = errors.Join(retErr, e.Stop())
		}
	}()
	e.identity = e.serviceAccountIdentity
	if e.Hub, err = controlplane.Connect(ctx, HubName, hub); err != nil {
		return nil, err
	}
	for _, name := range names {
		cp, err := controlplane.Connect(ctx, name, managed[name])
		if err != nil {
			return nil, err
		}
		mc, err := e.register(ctx, name)
		if err != nil {
			return nil, err
		}
		mc.ControlPlane = cp
		e.Managed = append(e.Managed, mc)
	}
	return e, nil
}

// Cluster returns the managed cluster called name, or nil.
func (e *Env) Cluster(name string) *ManagedCluster {
	for _, mc := range e.Managed {
		if mc.ControlPlane != nil && mc.Name == name {
			return mc
		}
	}
	return nil
}

// Stop stops every control plane at once and removes their state, and Dir
// too when Start created it. It is safe to call twice.
func (e *Env) Stop() error {
	e.stopOnce.Do(func() {
		controlplane.Untrack(e)
		e.stopBackground()
		planes := []*controlplane.ControlPlane{e.Hub}
		for _, mc := range e.Managed {
			if mc != nil {
				planes = append(planes, mc.ControlPlane)
			}
		}
		var mu sync.Mutex
		var errs []error
		var wg sync.WaitGroup
		for _, cp := range planes {
			if cp == nil {
				continue
			}
			wg.Go(func() {
				if err := cp.Stop(); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("stopping %s: %w", cp.Name, err))
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		remove := []string{e.state}
		if e.ownsDir {
			remove = append(remove, e.Dir)
		}
		for _, dir := range remove {
			if dir == "" {
				continue
			}
			if err := os.RemoveAll(dir); err != nil {
				errs = append(errs, err)
			}
		}
		e.stopErr = kerrors.NewAggregate(errs)
	})
	return e.stopErr
}

func newEnv(dir string) (*Env, error) {
	if dir == "" {
		tmp, err := controlplane.TempDir()
		if err != nil {
			return nil, err
		}
		return &Env{Dir: tmp, ownsDir: true}, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, err
	}
	return &Env{Dir: abs}, nil
}

// validateNames checks managed cluster names: unique DNS labels (they name
// namespaces), not "hub" (it names the hub's kubeconfig).
func validateNames(names []string) error {
	seen := map[string]bool{}
	for _, name := range names {
		if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
			return fmt.Errorf("managed cluster name %q: %v", name, errs)
		}
		if name == HubName || seen[name] {
			return fmt.Errorf("managed cluster name %q is reserved or repeated", name)
		}
		seen[name] = true
	}
	return nil
}

// startRetries bounds the attempts of each idempotent step of Start that
// writes to a control plane just started: on a loaded machine a single
// request can fail for a reason that a moment later is gone (a timeout, an
// API server still settling), and one failure would end the whole start.
const startRetries = 3

// retried runs step until it succeeds, up to startRetries times, a second
// apart.
func retried(ctx context.Context, step func() error) error {
	return controlplane.Retry(ctx, startRetries, time.Second, controlplane.Always, step)
}
