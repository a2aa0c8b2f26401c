package depwatch

import (
	"context"
	"errors"
	"fmt"
	"sync"

	depclient "github.com/stolostron/kubernetes-dependency-watches/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// ErrStopped is Hold's error once the watcher is stopping: the manager is
// shutting down. It wraps context.Canceled.
var ErrStopped = fmt.Errorf("the dependency watcher is stopping: %w", context.Canceled)

// Lifecycle runs one dependency watcher and keeps it from stopping while a
// reconcile holds it. It runs once: a manager is not restarted.
type Lifecycle struct {
	watcher depclient.DynamicWatcher
	// started is the watcher's Started channel when the Lifecycle was made:
	// the watcher replaces its channel when it stops, so it is read once.
	started <-chan struct{}
	// holds is held for reading by each Hold, and for writing by the
	// shutdown, which thus waits for every hold to be released.
	holds sync.RWMutex
	// stopping is set, under holds, when the shutdown begins; stop is
	// closed then.
	stopping bool
	stop     chan struct{}
}

// Setup creates a dependency watcher on mgr's cluster (NewWatcher), with
// its cache enabled and opts, and adds its Lifecycle to mgr. The watcher's events
// come from the returned source: add it with WatchesRawSource.
func Setup(mgr manager.Manager, opts depclient.Options) (*Lifecycle, source.Source, error) {
	relay, events := depclient.NewControllerRuntimeSource()
	w, err := NewWatcher(mgr.GetConfig(), relay, opts)
	if err != nil {
		return nil, nil, err
	}
	l := New(w)
	if err := mgr.Add(l); err != nil {
		return nil, nil, fmt.Errorf("adding the dependency watcher: %w", err)
	}
	return l, events, nil
}

// New returns the Lifecycle of w, which it starts and stops: run its Start
// (as a manager.Runnable) rather than w's.
func New(w depclient.DynamicWatcher) *Lifecycle {
	return &Lifecycle{watcher: w, started: w.Started(), stop: make(chan struct{})}
}

// Watcher returns the dependency watcher. Use it only under a hold.
func (l *Lifecycle) Watcher() depclient.DynamicWatcher {
	return l.watcher
}

// Start runs the watcher until ctx ends (or the watcher fails), then waits
// for every hold to be released before it stops the watcher.
func (l *Lifecycle) Start(ctx context.Context) error {
	select {
	case <-l.stop:
		return errors.New("the dependency watcher has run already")
	default:
	}
	inner, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- l.watcher.Start(inner) }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
	}
	l.holds.Lock()
	l.stopping = true
	close(l.stop)
	l.holds.Unlock()
	cancel()
	if err != nil {
		return err
	}
	return <-done
}

// Hold waits until the watcher has started and keeps it from stopping
// until release is called. It fails with ctx's error when ctx ends first,
// and with ErrStopped once the watcher is stopping. Note: never hold twice
// in one goroutine; a shutdown waiting between the two holds deadlocks.
func (l *Lifecycle) Hold(ctx context.Context) (release func(), err error) {
	select {
	case <-l.started:
	case <-l.stop:
		return nil, ErrStopped
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	l.holds.RLock()
	if l.stopping {
		l.holds.RUnlock()
		return nil, ErrStopped
	}
	return l.holds.RUnlock, nil
}

// TryHold holds the watcher if it runs, without waiting: ok is false
// before it starts and once it stops, when it holds no watch to remove (a
// nil Lifecycle, one never set up, holds nothing either).
func (l *Lifecycle) TryHold() (release func(), ok bool) {
	if l == nil {
		return nil, false
	}
	select {
	case <-l.started:
	default:
		return nil, false
	}
	if !l.holds.TryRLock() {
		return nil, false // the shutdown has begun
	}
	if l.stopping {
		l.holds.RUnlock()
		return nil, false
	}
	return l.holds.RUnlock, true
}
