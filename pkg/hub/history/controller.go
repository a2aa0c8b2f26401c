package history

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/controllerdefaults"
	"github.com/canopy-policy/canopy/pkg/history"
	"github.com/canopy-policy/canopy/pkg/replica"
)

// ControllerName names the recorder's controller, its logger and its
// metrics' controller label.
const ControllerName = "history"

// DefaultHubName is the hub name recorded when none is given.
const DefaultHubName = "hub"

// pruneInterval is how often retention runs.
const pruneInterval = time.Hour

// Recorder records the compliance history of replicas in a history store.
type Recorder struct {
	// Database is the store's URL: a SQLite file path, or postgres://...
	Database string
	// HubName is recorded with every transition; DefaultHubName when empty.
	HubName string
	// Retention is how long transitions are kept; history.DefaultRetention
	// when zero.
	Retention time.Duration
	// MaxConcurrentReconciles is how many replicas are read at once; their
	// transitions are written together.
	MaxConcurrentReconciles int

	apiReader client.Reader
	writer    *writer

	mu      sync.Mutex
	latest  map[types.NamespacedName]map[string]time.Time // newest event stored per replica and template
	pending map[types.NamespacedName]time.Time            // replicas whose change is not stored yet, since when
}

// SetupWithManager opens the store and adds the recorder to mgr. A
// malformed URL or a database of another schema version is an error; a
// database that does not answer yet is not: the recorder retries it while
// the other controllers run.
func (r *Recorder) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if r.HubName == "" {
		r.HubName = DefaultHubName
	}
	if r.Retention == 0 {
		r.Retention = history.DefaultRetention
	}
	r.apiReader = mgr.GetAPIReader()
	r.writer = newWriter(r.Database)
	r.latest = map[types.NamespacedName]map[string]time.Time{}
	r.pending = map[types.NamespacedName]time.Time{}
	if _, err := r.writer.open(ctx); err != nil {
		if fatal(err) {
			return fmt.Errorf("opening the history database: %w", err)
		}
		ctrl.LoggerFrom(ctx).Error(err, "History database does not answer; compliance history is recorded when it does")
	}
	lagOf.Store(r)
	if err := mgr.Add(r); err != nil {
		return fmt.Errorf("adding the history writer: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&policyv1.Policy{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool { return replica.IsReplica(o) }))).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: controllerdefaults.Concurrency(r.MaxConcurrentReconciles, 8),
			RateLimiter:             controllerdefaults.HubRateLimiter[reconcile.Request](),
		}).
		Complete(r)
}

// Start runs the writer and retention until ctx is cancelled. It runs on
// the leader only, like the controller.
func (r *Recorder) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName(ControllerName)
	go r.writer.run(ctx)
	for {
		n, err := r.writer.prune(ctx, time.Now().Add(-r.Retention))
		if err != nil {
			log.Error(err, "Applying history retention")
		} else if n > 0 {
			log.Info("Applied history retention", "dropped", n, "retention", r.Retention.String())
		}
		jitter := time.Duration(rand.Int64N(int64(pruneInterval / 10))) //nolint:gosec // spreads the hubs' pruning, no secret
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(pruneInterval + jitter):
		}
	}
}

// Reconcile stores the transitions of one replica's history that are not
// stored yet.
func (r *Recorder) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	p := &policyv1.Policy{}
	if err := r.apiReader.Get(ctx, req.NamespacedName, p); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("getting replica %s: %w", req.NamespacedName, err)
	}
	root, ok := replica.RootOf(p.Labels[policyv1.RootPolicyLabel])
	if !ok {
		return ctrl.Result{}, nil
	}
	r.markPending(req.NamespacedName)
	in := planInput{
		Hub: r.HubName, Cluster: p.Namespace, Policy: history.Policy{Namespace: root.Namespace, Name: root.Name},
		Created: p.CreationTimestamp.Time, Details: p.Status.Details, Cutoff: time.Now().Add(-r.Retention),
	}
	latest, err := r.latestOf(ctx, req.NamespacedName, in)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("reading the stored history of %s: %w", klog.KObj(p), err)
	}
	in.Latest = latest
	transitions, gaps := plan(in)
	if len(transitions) > 0 || len(gaps) > 0 {
		if err := r.writer.write(ctx, transitions, gaps); err != nil {
			return ctrl.Result{}, fmt.Errorf("recording the history of %s: %w", klog.KObj(p), err)
		}
		for _, g := range gaps {
			ctrl.LoggerFrom(ctx).Info("Recorded a history gap", "replica", klog.KObj(p), "template", g.Template, "from", g.From, "to", g.To)
		}
	}
	r.stored(req.NamespacedName, newest(latest, transitions))
	return ctrl.Result{}, nil
}

// latestOf returns the newest event stored per template of a replica, from
// memory or else from the store.
func (r *Recorder) latestOf(ctx context.Context, key types.NamespacedName, in planInput) (map[string]time.Time, error) {
	r.mu.Lock()
	latest, ok := r.latest[key]
	r.mu.Unlock()
	if ok {
		return latest, nil
	}
	return r.writer.latest(ctx, in.Hub, in.Cluster, in.Policy)
}

// markPending notes that a replica has a change not stored yet.
func (r *Recorder) markPending(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.pending[key]; !ok {
		r.pending[key] = time.Now()
	}
}

// stored notes that a replica's history is stored up to latest.
func (r *Recorder) stored(key types.NamespacedName, latest map[string]time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.latest[key] = latest
	delete(r.pending, key)
}

// forget drops what the recorder knows of a deleted replica.
func (r *Recorder) forget(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.latest, key)
	delete(r.pending, key)
}

// lag returns how long the oldest pending replica change has waited, in
// seconds.
func (r *Recorder) lag() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var oldest time.Time
	for _, since := range r.pending {
		if oldest.IsZero() || since.Before(oldest) {
			oldest = since
		}
	}
	if oldest.IsZero() {
		return 0
	}
	return time.Since(oldest).Seconds()
}
