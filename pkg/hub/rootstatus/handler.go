package rootstatus

import (
	"context"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/replica"
)

// coalesce is handler.EnqueueRequestsFromMapFunc, except that requests are
// added after window: the queue holds a waiting request once, so all the
// events of a burst within window lead to one reconcile.
func coalesce(window time.Duration, fn handler.MapFunc) handler.EventHandler {
	return &coalescingHandler{window: window, fn: fn}
}

type coalescingHandler struct {
	window time.Duration
	fn     handler.MapFunc
}

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

func (h *coalescingHandler) Create(ctx context.Context, e event.CreateEvent, q queue) {
	h.add(ctx, q, e.Object)
}

func (h *coalescingHandler) Update(ctx context.Context, e event.UpdateEvent, q queue) {
	h.add(ctx, q, e.ObjectOld)
	h.add(ctx, q, e.ObjectNew)
}

func (h *coalescingHandler) Delete(ctx context.Context, e event.DeleteEvent, q queue) {
	h.add(ctx, q, e.Object)
}

func (h *coalescingHandler) Generic(ctx context.Context, e event.GenericEvent, q queue) {
	h.add(ctx, q, e.Object)
}

func (h *coalescingHandler) add(ctx context.Context, q queue, obj client.Object) {
	if obj == nil {
		return
	}
	for _, req := range h.fn(ctx, obj) {
		q.AddAfter(req, h.window)
	}
}

// replicaToRoot maps a replica to its root policy.
func replicaToRoot(_ context.Context, obj client.Object) []reconcile.Request {
	key, ok := replica.RootOf(obj.GetLabels()[policyv1.RootPolicyLabel])
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: key}}
}
