package templatesync

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestDependantsGoFirst fills controller-runtime's priority queue (the one
// every controller uses) with a burst of new Policies, then adds a
// dependant as the dependency watch does: the dependant is taken first.
// A plain queue keeps the order.
func TestDependantsGoFirst(t *testing.T) {
	req := func(name string) reconcile.Request {
		return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "c1", Name: name}}
	}
	pq := priorityqueue.New[reconcile.Request]("test")
	defer pq.ShutDown()
	for i := range 200 {
		pq.Add(req(fmt.Sprintf("new-%d", i)))
	}
	addFirst(pq, req("dependant"))
	if got, priority, _ := pq.GetWithPriority(); got != req("dependant") || priority != UnblockPriority {
		t.Fatalf("first out of the priority queue: %v at %d, want the dependant at %d", got, priority, UnblockPriority)
	}

	plain := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer plain.ShutDown()
	plain.Add(req("new-0"))
	addFirst(plain, req("dependant"))
	if got, _ := plain.Get(); got != req("new-0") {
		t.Fatalf("first out of a plain queue: %v, want the first added", got)
	}
}
