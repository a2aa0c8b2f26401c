package cmdutil

import (
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// NewManager is ctrl.NewManager with the controller defaults every Canopy
// manager needs; every manager of the project, the tests' included, is made
// here.
//
// Note: controller-runtime v0.23.1's priority queue (its default) can
// deadlock on shutdown: a worker leaving on shutdown leaves the queue's
// hand-off goroutine blocked while it holds the queue's lock, so the other
// workers never return and the manager gives up after its grace period
// (kubernetes-sigs/controller-runtime#3538, fixed after v0.23.1 by #3540).
// The plain rate-limited work queue does not have that hand-off. Drop this
// when the pinned controller-runtime has the fix.
func NewManager(cfg *rest.Config, opts manager.Options) (manager.Manager, error) {
	opts.Controller = ControllerDefaults(opts.Controller)
	return ctrl.NewManager(cfg, opts) //nolint:forbidigo // the one place that may
}

// ControllerDefaults sets, where c leaves them unset, the controller options
// of NewManager.
func ControllerDefaults(c config.Controller) config.Controller {
	if c.UsePriorityQueue == nil {
		c.UsePriorityQueue = ptr.To(false)
	}
	return c
}
