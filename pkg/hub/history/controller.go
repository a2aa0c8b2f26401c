package history

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

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

// DeploymentName is the name of the hub's Deployment in deploy/hub, the
// one the hub's RBAC lets it set ConditionHistoryRecording on.
const DeploymentName = "canopy-hub"

// pruneInterval is how often retention runs; pruneRetry how soon it runs
// again after it failed.
const (
	pruneInterval = time.Hour
	pruneRetry    = 30 * time.Second
)

// probeInterval is how often the recorder checks whether the database
// answers again while replicas wait to be stored.
const probeInterval = controllerdefaults.MaxHubRetryDelay

// The recorder reads the hub's Deployment and sets ConditionHistoryRecording
// on it, with an Event when it changes.
//
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get,resourceNames=canopy-hub
// +kubebuilder:rbac:groups=apps,resources=deployments/status,verbs=patch,resourceNames=canopy-hub
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

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
	// Deployment is the hub's Deployment, which carries
	// ConditionHistoryRecording and its Events; empty means none (the
	// health is then in the log and the metrics only).
	Deployment types.NamespacedName

	apiReader client.Reader
	client    client.Client
	events    events.EventRecorder
	writer    *writer
	health    *health
	retry     chan event.GenericEvent

	loadMu  sync.Mutex  // serialises loading what is stored
	loaded  atomic.Bool // whether latest holds what the store held at start
	waiting atomic.Bool // whether the last write failed: replicas wait for the probe

	mu      sync.Mutex
	latest  map[types.NamespacedName]map[string]time.Time // newest event stored per replica and template
	pending map[types.NamespacedName]*pendingReplica      // replicas with a change not stored yet
	stalled map[types.NamespacedName]bool                 // pending replicas waiting for the database
}

// SetupWithManager opens the store and adds the recorder to mgr. A
// database that does not answer, a malformed URL or a database of another
// schema version is no error: the hub starts, the policy path runs, and
// the recorder reports the problem as ConditionHistoryRecording False and
// tries again.
func (r *Recorder) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if r.HubName == "" {
		r.HubName = DefaultHubName
	}
	if r.Retention == 0 {
		r.Retention = history.DefaultRetention
	}
	r.apiReader, r.client = mgr.GetAPIReader(), mgr.GetClient()
	r.events = mgr.GetEventRecorder("canopy-" + ControllerName)
	r.health = newHealth(recordingMessage(r.Database))
	r.writer = newWriter(r.Database, r.health)
	r.retry = make(chan event.GenericEvent, 1024)
	r.latest = map[types.NamespacedName]map[string]time.Time{}
	r.pending = map[types.NamespacedName]*pendingReplica{}
	r.stalled = map[types.NamespacedName]bool{}
	if _, err := r.writer.open(ctx); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "History database is not usable; compliance history is recorded once it is", "reason", r.health.state().Reason)
	}
	lagOf.Store(r)
	if err := mgr.Add(r); err != nil {
		return fmt.Errorf("adding the history writer: %w", err)
	}
	isReplica := predicate.NewPredicateFuncs(func(o client.Object) bool { return replica.IsReplica(o) })
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		Watches(&policyv1.Policy{}, changes{r}, builder.WithPredicates(isReplica)).
		WatchesRawSource(source.Channel(r.retry, changes{r})).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: controllerdefaults.Concurrency(r.MaxConcurrentReconciles, 8),
			RateLimiter:             controllerdefaults.HubRateLimiter[reconcile.Request](),
		}).
		Complete(r)
}

// recordingMessage is the message of ConditionHistoryRecording True: where
// the history goes, never the URL (it may hold a password).
func recordingMessage(url string) string {
	if history.IsPostgres(url) {
		return "Compliance history is recorded in PostgreSQL (--history-database)."
	}
	return "Compliance history is recorded in the embedded SQLite database " + url + "."
}

// Start runs the writer, retention, the database probe and the health
// condition until ctx is cancelled. It runs on the leader only, like the
// controller.
func (r *Recorder) Start(ctx context.Context) error {
	go r.writer.run(ctx)
	go r.reportHealth(ctx)
	go r.probe(ctx)
	r.prune(ctx)
	return nil
}

// prune applies retention now and every pruneInterval, sooner again when
// it failed.
func (r *Recorder) prune(ctx context.Context) {
	log := ctrl.LoggerFrom(ctx).WithName(ControllerName)
	for {
		wait := pruneInterval
		n, err := r.writer.prune(ctx, time.Now().Add(-r.Retention))
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			log.Error(err, "Applying history retention")
			wait = pruneRetry
		case n > 0:
			log.Info("Applied history retention", "dropped", n, "retention", r.Retention.String())
		}
		jitter := time.Duration(rand.Int64N(int64(wait / 10))) //nolint:gosec // spreads the hubs' pruning, no secret
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait + jitter):
		}
	}
}

// probe checks, every probeInterval while replicas wait for the database,
// whether it answers, and then queues those replicas again. Replicas do
// not retry one by one: a long outage costs one probe per interval, not
// one request per changed replica.
func (r *Recorder) probe(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(probeInterval):
		}
		stalled := r.takeStalled()
		if len(stalled) == 0 {
			continue
		}
		if err := r.writer.probe(ctx); err != nil {
			r.restall(stalled)
			continue
		}
		r.waiting.Store(false)
		for _, key := range stalled {
			p := &policyv1.Policy{}
			p.Namespace, p.Name = key.Namespace, key.Name
			select {
			case r.retry <- event.GenericEvent{Object: p}:
			case <-ctx.Done():
				return
			}
		}
	}
}

// Reconcile stores the transitions of one replica's history that are not
// stored yet. It reads the replica only when it changed since it was last
// read; while the database fails, the replica waits for the probe with
// what was read, so that a replica deleted meanwhile is still recorded,
// and no reconcile waits on the database.
func (r *Recorder) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	key := req.NamespacedName
	if seen, ok := r.unread(key); ok {
		if err := r.read(ctx, key, seen); err != nil {
			return ctrl.Result{}, err
		}
	}
	if r.waiting.Load() { // the probe queues it again when the database answers
		r.stall(key)
		return ctrl.Result{}, nil
	}
	if err := r.flush(ctx, key); err != nil {
		if ctx.Err() != nil {
			return ctrl.Result{}, nil // stopping; the next leader reads it again
		}
		ctrl.LoggerFrom(ctx).V(4).Info("Replica waits for the history database", "replica", key, "error", err.Error())
		r.waiting.Store(true)
		r.stall(key)
	}
	return ctrl.Result{}, nil
}

// read reads a replica (as of change count seen, or later) into its
// pending state; a replica that is gone is marked deleted.
func (r *Recorder) read(ctx context.Context, key types.NamespacedName, seen uint64) error {
	p := &policyv1.Policy{}
	if err := r.apiReader.Get(ctx, key, p); err != nil {
		if apierrors.IsNotFound(err) {
			r.gone(key, seen)
			return nil
		}
		return fmt.Errorf("getting replica %s: %w", key, err)
	}
	root, ok := replica.RootOf(p.Labels[policyv1.RootPolicyLabel])
	if !ok {
		r.gone(key, seen)
		return nil
	}
	r.setRead(key, seen, planInput{
		Hub: r.HubName, Cluster: p.Namespace, Policy: history.Policy{Namespace: root.Namespace, Name: root.Name},
		Created: p.CreationTimestamp.Time, Details: p.Status.Details, Cutoff: time.Now().Add(-r.Retention),
	})
	return nil
}

// flush plans what a replica's pending state holds against what is stored
// and writes it.
func (r *Recorder) flush(ctx context.Context, key types.NamespacedName) error {
	if err := r.load(ctx); err != nil {
		return err
	}
	transitions, gaps, ok := r.planPending(key)
	if !ok {
		return nil
	}
	if len(transitions) > 0 || len(gaps) > 0 {
		if err := r.writer.write(ctx, transitions, gaps); err != nil {
			return fmt.Errorf("recording the history of %s: %w", key, err)
		}
		for _, g := range gaps {
			ctrl.LoggerFrom(ctx).Info("Recorded a history gap", "replica", key, "template", g.Template, "from", g.From, "to", g.To)
		}
	}
	r.stored(key, transitions)
	return nil
}

// load reads, once, the newest event stored of every replica of this hub:
// one query instead of one per replica.
func (r *Recorder) load(ctx context.Context) error {
	if r.loaded.Load() {
		return nil
	}
	r.loadMu.Lock()
	defer r.loadMu.Unlock()
	if r.loaded.Load() {
		return nil
	}
	all, err := r.writer.latestAll(ctx, r.HubName)
	if err != nil {
		return fmt.Errorf("reading the stored history: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for rep, latest := range all {
		key := types.NamespacedName{Namespace: rep.Cluster, Name: rep.Policy.Namespace + "." + rep.Policy.Name}
		if _, ok := r.latest[key]; !ok {
			r.latest[key] = latest
		}
	}
	r.loaded.Store(true)
	return nil
}

// lag returns how long the oldest pending replica change has waited, in
// seconds.
func (r *Recorder) lag() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var oldest time.Time
	for _, p := range r.pending {
		if oldest.IsZero() || p.since.Before(oldest) {
			oldest = p.since
		}
	}
	if oldest.IsZero() {
		return 0
	}
	return time.Since(oldest).Seconds()
}
