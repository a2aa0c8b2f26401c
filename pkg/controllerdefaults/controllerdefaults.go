// Package controllerdefaults holds, in one place, how many requests each
// Canopy controller reconciles at once by default and how it backs off
// from failures. Every controller reads its default from here, and so does
// cmd/hub's --concurrent-reconciles flag, so that a test, the binary and
// the docs cannot disagree.
//
// This package is a leaf: it imports only client-go's workqueue and
// controller-runtime's controller options.
package controllerdefaults

import (
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Concurrency defaults: how many requests a controller reconciles at once
// when its MaxConcurrentReconciles is zero.
const (
	// HubConcurrency is each hub controller's: the propagator's, the root
	// status controller's and the PolicySet status controller's.
	HubConcurrency = 2
	// ConfigPolicyConcurrency is how many ConfigurationPolicies are
	// evaluated at once: an evaluation mostly waits on the API server.
	ConfigPolicyConcurrency = 8
	// TemplateSyncConcurrency is how many Policies templatesync syncs at
	// once: a reconcile mostly waits on the API server and the dependency
	// watches, so one worker makes every Policy wait for the others (make
	// bench: dependency latency; 4 workers were busy all the time while
	// 2,000 new Policies arrived, with the agent's CPU mostly idle).
	TemplateSyncConcurrency = 12
	// SyncerConcurrency is how many keys the hierarchical syncer reconciles
	// at once.
	SyncerConcurrency = 2
)

// Concurrency returns n when it is positive, def otherwise: a controller's
// MaxConcurrentReconciles field with its default applied.
func Concurrency(n, def int) int {
	if n > 0 {
		return n
	}
	return def
}

// HubOptions are a hub controller's options: n workers, or HubConcurrency
// when n is zero, and controller-runtime's default backoff.
func HubOptions(n int) controller.Options {
	return controller.Options{MaxConcurrentReconciles: Concurrency(n, HubConcurrency)}
}

// Backoff of transient failures.
const (
	// RetryBaseDelay and RetryMaxDelay bound RateLimiter's backoff.
	RetryBaseDelay = time.Second
	RetryMaxDelay  = 5 * time.Minute
	// HubRetryBaseDelay and MaxHubRetryDelay bound HubRateLimiter's backoff.
	HubRetryBaseDelay = 100 * time.Millisecond
	MaxHubRetryDelay  = 5 * time.Second
)

// RateLimiter is the backoff of the agent's evaluating controllers
// (configpolicy, the hierarchical syncer) for transient failures: one
// second doubling to five minutes, per request.
func RateLimiter[T comparable]() workqueue.TypedRateLimiter[T] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[T](RetryBaseDelay, RetryMaxDelay)
}

// HubWriterOptions are the options of statussync-hub, the agent's
// controller that writes to the hub: HubRateLimiter, and the manager's
// default concurrency.
func HubWriterOptions() controller.Options {
	return controller.Options{RateLimiter: HubRateLimiter[reconcile.Request]()}
}

// HubRateLimiter is the backoff of the agent's writes to the hub
// (statussync-hub): 100ms doubling to MaxHubRetryDelay, so that a status is
// sent within seconds of the hub's return however long it was away.
func HubRateLimiter[T comparable]() workqueue.TypedRateLimiter[T] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[T](HubRetryBaseDelay, MaxHubRetryDelay)
}
