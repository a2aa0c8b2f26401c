package statuspatch

import (
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Written remembers, for a writer that reads its objects from a cache and
// owns their whole status (Owner), the object each of its last status
// writes returned. The cache may not hold that write yet when the next
// reconcile of the object reads it, and a status compared with, and
// patched from, the older one the cache still shows goes wrong both ways:
// an evaluation that finds everything as it was writes again, and one
// that finds everything as the older status said would write nothing,
// leaving the newer status on the API server (with Owner, the write is
// refused instead, and redone after a read of the API server: correct,
// but a round trip more). Snapshot with Remember sets such an object to
// the one written. Hold one Written per controller, for its lifetime.
type Written[T Object[T]] struct {
	m sync.Map // types.NamespacedName → written[T]
}

// written is an object as a status write returned it, and the
// resourceVersion the write was made on (its precondition).
type written[T any] struct {
	readRV string
	obj    T
}

// Forget drops what was written on the object key names (deleted).
func (w *Written[T]) Forget(key types.NamespacedName) {
	w.m.Delete(key)
}

// record remembers obj, just written on the object at readRV.
func (w *Written[T]) record(readRV string, obj T) {
	w.m.Store(client.ObjectKeyFromObject(obj), written[T]{readRV: readRV, obj: obj.DeepCopy()})
}

// restore sets obj, read from a cache, to the object last written on it
// when the cache holds the very version that write was made on: the write
// changed nothing else than the status (and the resourceVersion), and the
// writer is the status's only writer. A cache that holds the written
// version drops the entry; one that holds any other version is left as it
// is (a version the cache has not reached, or a later change: a
// precondition refuses a stale one).
func (w *Written[T]) restore(obj T) {
	key := client.ObjectKeyFromObject(obj)
	v, ok := w.m.Load(key)
	if !ok {
		return
	}
	last := v.(written[T])
	switch {
	case last.obj.GetUID() != obj.GetUID():
		w.m.CompareAndDelete(key, v) // another object of the same name
	case last.obj.GetResourceVersion() == obj.GetResourceVersion():
		w.m.CompareAndDelete(key, v) // the cache has caught up
	case last.readRV == obj.GetResourceVersion():
		reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(last.obj.DeepCopy()).Elem())
	}
}
