package cmdutil

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// TestControllerStopsUnderLoad starts and stops, many times, a controller
// with controller-runtime's defaults (its priority queue) whose workers are
// kept busy, and fails when a stop does not return: with controller-runtime
// v0.23.1 one hung within a few hundred rounds
// (kubernetes-sigs/controller-runtime#3538, fixed by #3540); it guards the
// pinned release.
func TestControllerStopsUnderLoad(t *testing.T) {
	opts := config.Controller{UsePriorityQueue: ptr.To(true)}
	for round := range 500 {
		if err := startAndStop(t.Context(), opts); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
}

// startAndStop runs a controller whose queue is fed without pause, and
// stops it after a few milliseconds.
func startAndStop(parent context.Context, opts config.Controller) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	c, err := controller.NewTypedUnmanaged("stop-test", controller.TypedOptions[reconcile.Request]{
		MaxConcurrentReconciles: 20,
		UsePriorityQueue:        opts.UsePriorityQueue,
		SkipNameValidation:      ptr.To(true),
		Logger:                  logr.Discard(),
		Reconciler: reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
			return reconcile.Result{}, nil
		}),
	})
	if err != nil {
		return err
	}
	feed := source.TypedFunc[reconcile.Request](func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		go func() {
			for ctx.Err() == nil {
				q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: fmt.Sprint(rand.IntN(1000))}})
			}
		}()
		return nil
	})
	if err := c.Watch(feed); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	time.Sleep(2 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		return fmt.Errorf("the controller did not stop within 20 s")
	}
}
