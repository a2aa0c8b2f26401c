package evaluator

import (
	"context"
	"fmt"

	depclient "github.com/stolostron/kubernetes-dependency-watches/client"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/canopy-policy/canopy/pkg/compliance"
	"github.com/canopy-policy/canopy/pkg/controllerdefaults"
	"github.com/canopy-policy/canopy/pkg/depwatch"
	"github.com/canopy-policy/canopy/pkg/statuspatch"
)

// Policy is a pointer to a policy template type an evaluator reconciles.
type Policy[T any] interface {
	statuspatch.Object[T]
}

// Kind says what differs between the evaluators in what Base does for
// them: which kind of policy, how to read it, and whether to watch what it
// reads. Each evaluator package declares one.
type Kind[T Policy[T]] struct {
	// Name names the controller in logs and metrics, and the Reconciler in
	// the error of a missing client.
	Name string
	// GVK is the kind of the policies: the dependency watcher knows a
	// policy by it (WatcherID).
	GVK schema.GroupVersionKind
	// New returns an empty policy, to read one into.
	New func() T
	// Status returns a policy's status, compared before and after an
	// evaluation so that it is written only when it changed.
	Status func(T) any
	// Watch makes Setup create a dynamic client and a dependency watcher
	// that re-evaluates a policy when an object it read changes; Reconcile
	// holds the watcher for the whole evaluation.
	Watch bool
}

// Clients are the clients every evaluator's Reconciler holds, as its
// fields of the same names.
type Clients struct {
	// ManagedClient writes the policies' status; required.
	ManagedClient client.Client
	// ManagedReader reads from the managed cluster's API server; Setup
	// defaults it to the manager's API reader.
	ManagedReader client.Reader
	// Recorder records compliance on the parent Policies; required.
	// Reconcile forgets a deleted policy in it.
	Recorder *compliance.Recorder
}

// Base is the part of an evaluator's Reconciler that every evaluator
// shares, made by Setup.
type Base[T Policy[T]] struct {
	Kind[T]
	Clients
	// Dynamic reads and writes the objects the policies name; set when
	// Kind.Watch is true.
	Dynamic dynamic.Interface
	// Watches runs the dependency watcher; set when Kind.Watch is true.
	Watches *depwatch.Lifecycle
	// OnForget, when set, drops what the evaluator itself keeps in memory
	// for a deleted policy; Forget calls it.
	OnForget func(types.NamespacedName)
}

// Setup checks and defaults clients, creates the dynamic client and
// dependency watcher when kind.Watch is true, and returns the Base and the
// controller's builder: named kind.Name, for kind's policies (filtered by
// predicates), and watching the dependency watcher's events. The caller
// adds its own watches and options, then completes the builder.
func Setup[T Policy[T]](mgr ctrl.Manager, kind Kind[T], clients Clients, predicates ...predicate.Predicate) (*Base[T], *builder.Builder, error) {
	if clients.ManagedClient == nil || clients.Recorder == nil {
		return nil, nil, fmt.Errorf("%s.Reconciler needs a ManagedClient and a Recorder", kind.Name)
	}
	if clients.ManagedReader == nil {
		clients.ManagedReader = mgr.GetAPIReader()
	}
	b := &Base[T]{Kind: kind, Clients: clients}
	bld := ctrl.NewControllerManagedBy(mgr).Named(kind.Name).For(kind.New(), builder.WithPredicates(predicates...))
	if !kind.Watch {
		return b, bld, nil
	}
	var err error
	if b.Dynamic, err = dynamic.NewForConfig(mgr.GetConfig()); err != nil {
		return nil, nil, fmt.Errorf("creating the dynamic client: %w", err)
	}
	watches, events, err := depwatch.Setup(mgr, depclient.Options{DisableInitialReconcile: true})
	if err != nil {
		return nil, nil, err
	}
	b.Watches = watches
	return b, bld.WatchesRawSource(events), nil
}

// Reconcile is the shape of every evaluator's Reconcile: it holds the
// dependency watcher (so that the watcher stops only once the evaluation
// is over), reads the policy req names, forgets it when it is gone,
// snapshots its status, runs evaluate, and writes the status once, here,
// whatever evaluate returned, if it changed.
func (b *Base[T]) Reconcile(ctx context.Context, req ctrl.Request, evaluate func(context.Context, T) (ctrl.Result, error)) (_ ctrl.Result, retErr error) {
	if b.Watches != nil {
		release, err := b.Watches.Hold(ctx)
		if err != nil {
			return ctrl.Result{}, err
		}
		defer release()
	}
	policy := b.New()
	// Note: from the API server, not the cache, so that each evaluation
	// compares with the status the last one wrote (a cache a second behind
	// made a steady CertificatePolicy write its status again).
	if err := b.ManagedReader.Get(ctx, req.NamespacedName, policy); err != nil {
		if apierrors.IsNotFound(err) {
			b.Forget(ctx, req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	status := statuspatch.Snapshot(b.ManagedClient, policy, b.Status, statuspatch.Owner[T](b.ManagedReader))
	defer status.Apply(ctx, &retErr)
	return evaluate(ctx, policy)
}

// Forget drops what is kept in memory for a deleted policy: its watches
// and the compliance last recorded for it.
func (b *Base[T]) Forget(ctx context.Context, key types.NamespacedName) {
	b.StopWatching(ctx, key)
	b.Recorder.Forget(key)
	if b.OnForget != nil {
		b.OnForget(key)
	}
}

// StopWatching removes the watches of a policy, when the evaluator
// watches anything.
func (b *Base[T]) StopWatching(ctx context.Context, key types.NamespacedName) {
	if b.Watches == nil {
		return
	}
	if err := b.Watches.Watcher().RemoveWatcher(WatcherID(b.GVK, key)); err != nil {
		ctrl.LoggerFrom(ctx).V(4).Info("Cannot remove the watches of a policy", "error", err.Error())
	}
}

// StartQueryBatch starts the dependency watcher's query batch of the
// policy named key: the watcher's Get and List within it start the watches
// the evaluation needs, and end stops those it no longer read. Defer end,
// so that the batch ends however the evaluation does: one left open (by a
// panic) fails every later start, and the policy's status never changes
// again.
func (b *Base[T]) StartQueryBatch(ctx context.Context, key types.NamespacedName) (id depclient.ObjectIdentifier, end func(), err error) {
	id = WatcherID(b.GVK, key)
	if err := b.Watches.Watcher().StartQueryBatch(id); err != nil {
		return id, nil, fmt.Errorf("starting the watches of %s: %w", key, err)
	}
	return id, func() {
		if err := b.Watches.Watcher().EndQueryBatch(id); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Cannot end the watches of a policy", "policy", key)
		}
	}, nil
}

// WatcherID identifies the policy of kind kind named key to a dependency
// watcher.
func WatcherID(kind schema.GroupVersionKind, key types.NamespacedName) depclient.ObjectIdentifier {
	return depclient.ObjectIdentifier{Group: kind.Group, Version: kind.Version, Kind: kind.Kind,
		Namespace: key.Namespace, Name: key.Name}
}

// Options are an evaluator's controller options: n workers
// (controllerdefaults.ConfigPolicyConcurrency when n is zero) and the
// agent's failure backoff.
func Options(n int) controller.Options {
	return controller.Options{
		MaxConcurrentReconciles: controllerdefaults.Concurrency(n, controllerdefaults.ConfigPolicyConcurrency),
		RateLimiter:             controllerdefaults.RateLimiter[reconcile.Request](),
	}
}
