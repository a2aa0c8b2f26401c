package propagator

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/hubtemplates"
)

// hubTemplates is the propagator's side of hub template resolution
// (pkg/hubtemplates): the Cache, run by the manager; its watch events,
// which reach the controller as requests to reconcile a root; its work,
// counted in the propagator's metrics. A nil hubTemplates resolves nothing.
type hubTemplates struct {
	*hubtemplates.Cache
	// requests carries the roots to reconcile to the controller.
	requests chan event.TypedGenericEvent[types.NamespacedName]
}

func newHubTemplates(mgr ctrl.Manager, denylist []string) (*hubTemplates, error) {
	h := &hubTemplates{requests: make(chan event.TypedGenericEvent[types.NamespacedName], 1024)}
	cache, err := hubtemplates.NewCache(hubtemplates.Options{
		Config:            mgr.GetConfig(),
		Client:            mgr.GetClient(),
		Reader:            mgr.GetAPIReader(),
		Changed:           h.enqueue,
		DenylistFunctions: denylist,
		Log:               ctrl.Log.WithName(ControllerName),
		Resolved: func(root types.NamespacedName) {
			hubTemplateResolutions.WithLabelValues(root.Namespace, root.Name).Inc()
		},
		ServiceAccountResolver: func(sa types.NamespacedName, running bool) {
			if running {
				serviceAccountResolvers.WithLabelValues(sa.Namespace, sa.Name).Set(1)
			} else {
				serviceAccountResolvers.DeleteLabelValues(sa.Namespace, sa.Name)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	h.Cache = cache
	return h, nil
}

// enqueue asks for a reconcile of root, whose replica read an object that
// changed.
func (h *hubTemplates) enqueue(ctx context.Context, root types.NamespacedName) {
	select {
	case h.requests <- event.TypedGenericEvent[types.NamespacedName]{Object: root}:
	case <-ctx.Done():
	}
}

// requestSource is the controller's source of the roots whose replicas
// read an object that changed.
func (h *hubTemplates) requestSource() source.TypedSource[reconcile.Request] {
	return source.Channel(h.requests, handler.TypedFuncs[types.NamespacedName, reconcile.Request]{
		GenericFunc: func(_ context.Context, e event.TypedGenericEvent[types.NamespacedName], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			q.Add(reconcile.Request{NamespacedName: e.Object})
		},
	})
}

// resolve is hubtemplates.Cache.Resolve.
func (h *hubTemplates) resolve(ctx context.Context, root hubtemplates.Root, desired, existing *policyv1.Policy) hubtemplates.Result {
	if h == nil {
		return hubtemplates.Result{}
	}
	return h.Resolve(ctx, root, desired, existing)
}

// retain is hubtemplates.Cache.Retain.
func (h *hubTemplates) retain(ctx context.Context, replicaName string, keep sets.Set[string]) {
	if h == nil {
		return
	}
	h.Retain(ctx, replicaName, keep)
}
