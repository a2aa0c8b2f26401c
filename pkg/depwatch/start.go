package depwatch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	depclient "github.com/stolostron/kubernetes-dependency-watches/client"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// StartTimeout bounds each LIST and the start of each WATCH the dependency
// watcher sends: a Get or List that starts a watch fails after it, rather
// than waiting on a slow API server for ever.
const StartTimeout = 30 * time.Second

// NewWatcher returns a dependency watcher on the cluster of cfg, its cache
// enabled, that sends reconciler the watchers whose watched objects
// change, and that starts each new watch before it takes its lock.
//
// Note: the library's watcher starts a new watch (a LIST, then a WATCH)
// under its one lock, which every Get, List, StartQueryBatch and watch
// event of every watcher also takes: one slow LIST held up every
// evaluation and every event of the controller. The watcher returned here
// sends the LIST and starts the WATCH first, without the lock, each within
// StartTimeout; the library's own requests, under the lock, then take
// their answers.
func NewWatcher(cfg *rest.Config, reconciler depclient.Reconciler, opts depclient.Options) (depclient.DynamicWatcher, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the dependency watcher's dynamic client: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the dependency watcher's discovery client: %w", err)
	}
	opts.EnableCache = true
	s := &starts{Interface: dyn, ready: map[startKey][]*started{}}
	return &watcher{DynamicWatcher: depclient.NewWithClients(s, disc, reconciler, &opts), starts: s}, nil
}

// watcher is a dependency watcher whose Get and List start a new watch
// before the library takes its lock.
type watcher struct {
	depclient.DynamicWatcher
	starts *starts
}

// Get returns the object, as the library's Get, having started its watch
// first when it has none.
func (w *watcher) Get(id depclient.ObjectIdentifier, gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, error) {
	done, err := w.prestart(gvk, ns, metav1.ListOptions{FieldSelector: "metadata.name=" + name},
		func(ns string) error { _, err := w.GetFromCache(gvk, ns, name); return err })
	if err != nil {
		return nil, err
	}
	defer done()
	return w.DynamicWatcher.Get(id, gvk, ns, name)
}

// List returns the objects, as the library's List, having started their
// watch first when they have none.
func (w *watcher) List(id depclient.ObjectIdentifier, gvk schema.GroupVersionKind, ns string, sel labels.Selector) ([]unstructured.Unstructured, error) {
	if sel == nil {
		sel = labels.Everything()
	}
	done, err := w.prestart(gvk, ns, metav1.ListOptions{LabelSelector: sel.String()},
		func(ns string) error { _, err := w.ListFromCache(gvk, ns, sel); return err })
	if err != nil {
		return nil, err
	}
	defer done()
	return w.DynamicWatcher.List(id, gvk, ns, sel)
}

// prestart starts the watch of the objects of gvk in ns that opts select,
// unless cached finds them in the watcher's cache (they are watched
// already). done drops the start if the library did not take it.
func (w *watcher) prestart(gvk schema.GroupVersionKind, ns string, opts metav1.ListOptions, cached func(ns string) error) (done func(), err error) {
	gvr, err := w.GVKToGVR(gvk)
	if err != nil {
		return func() {}, nil // the library's call reports it
	}
	if !gvr.Namespaced {
		ns = ""
	}
	if cached(ns) == nil {
		return func() {}, nil
	}
	return w.starts.start(gvr.GroupVersionResource, ns, opts)
}

// startKey is what a LIST and its WATCH are sent for.
type startKey struct {
	gvr                          schema.GroupVersionResource
	namespace                    string
	fieldSelector, labelSelector string
}

func keyOf(gvr schema.GroupVersionResource, ns string, opts metav1.ListOptions) startKey {
	return startKey{gvr: gvr, namespace: ns, fieldSelector: opts.FieldSelector, labelSelector: opts.LabelSelector}
}

// started is a watch started for the library: the LIST's answer, and the
// WATCH from its resourceVersion.
type started struct {
	list                  *unstructured.UnstructuredList
	watch                 apiwatch.Interface
	listTaken, watchTaken bool
}

// starts is the dynamic client the library sends its requests with. Its
// LIST and WATCH take the answers of the watches started for them, and
// are sent within StartTimeout when there is none.
type starts struct {
	dynamic.Interface
	mu sync.Mutex
	// ready holds the watches started and not yet taken entirely.
	ready map[startKey][]*started
}

// start sends the LIST and starts the WATCH of key, without any lock, and
// keeps them for the library's requests; done drops what the library did
// not take. Only a LIST that times out fails it: the library sends again
// what failed otherwise (or what cannot be watched), so that its errors
// are what they were.
func (s *starts) start(gvr schema.GroupVersionResource, ns string, opts metav1.ListOptions) (done func(), err error) {
	res := s.resource(gvr, ns)
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	list, err := res.List(ctx, opts)
	switch {
	case errors.Is(err, context.DeadlineExceeded) || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err):
		return nil, fmt.Errorf("listing %s in %q to watch them: %w", gvr.Resource, ns, err)
	case err != nil:
		return func() {}, nil
	}
	st := &started{list: list}
	if rv := list.GetResourceVersion(); rv != "" {
		wopts := opts
		wopts.ResourceVersion, wopts.AllowWatchBookmarks = rv, true
		st.watch, _ = watchWithin(res, wopts) // on an error, the library starts its own
	}
	key := keyOf(gvr, ns, opts)
	s.mu.Lock()
	s.ready[key] = append(s.ready[key], st)
	s.mu.Unlock()
	return func() { s.drop(key, st) }, nil
}

// drop forgets st, stopping its watch if the library did not take it.
func (s *starts) drop(key startKey, st *started) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, r := range s.ready[key] {
		if r == st {
			s.ready[key] = append(s.ready[key][:i:i], s.ready[key][i+1:]...)
			break
		}
	}
	if len(s.ready[key]) == 0 {
		delete(s.ready, key)
	}
	if st.watch != nil && !st.watchTaken {
		st.watch.Stop()
	}
}

// takeList returns the LIST answer of a watch started for key, nil when
// there is none.
func (s *starts) takeList(key startKey) *unstructured.UnstructuredList {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.ready[key] {
		if !st.listTaken {
			st.listTaken = true
			return st.list
		}
	}
	return nil
}

// takeWatch returns the WATCH started for key from resourceVersion rv
// whose LIST was taken, nil when there is none.
func (s *starts) takeWatch(key startKey, rv string) apiwatch.Interface {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.ready[key] {
		if st.listTaken && !st.watchTaken && st.watch != nil && st.list.GetResourceVersion() == rv {
			st.watchTaken = true
			return st.watch
		}
	}
	return nil
}

// resource returns the client of gvr's objects in ns ("" for all, or
// cluster scope).
func (s *starts) resource(gvr schema.GroupVersionResource, ns string) dynamic.ResourceInterface {
	if ns == "" {
		return s.Interface.Resource(gvr)
	}
	return s.Interface.Resource(gvr).Namespace(ns)
}

// Resource returns the client of gvr's objects whose LIST and WATCH take
// the started watches' answers.
func (s *starts) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	inner := s.Interface.Resource(gvr)
	return &namespaceable{resource: resource{ResourceInterface: inner, s: s, gvr: gvr}, inner: inner}
}

type namespaceable struct {
	resource
	inner dynamic.NamespaceableResourceInterface
}

func (n *namespaceable) Namespace(ns string) dynamic.ResourceInterface {
	return &resource{ResourceInterface: n.inner.Namespace(ns), s: n.s, gvr: n.gvr, namespace: ns}
}

type resource struct {
	dynamic.ResourceInterface
	s         *starts
	gvr       schema.GroupVersionResource
	namespace string
}

func (r *resource) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	if list := r.s.takeList(keyOf(r.gvr, r.namespace, opts)); list != nil {
		return list.DeepCopy(), nil
	}
	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	return r.ResourceInterface.List(ctx, opts)
}

func (r *resource) Watch(_ context.Context, opts metav1.ListOptions) (apiwatch.Interface, error) {
	if w := r.s.takeWatch(keyOf(r.gvr, r.namespace, opts), opts.ResourceVersion); w != nil {
		return w, nil
	}
	// Note: the library sends its watches with context.Background().
	return watchWithin(r.ResourceInterface, opts)
}

// watchWithin starts a WATCH, giving up when it has not started within
// StartTimeout; the watch then runs until it is stopped.
func watchWithin(res dynamic.ResourceInterface, opts metav1.ListOptions) (apiwatch.Interface, error) {
	ctx, cancel := context.WithCancel(context.Background())
	timer := time.AfterFunc(StartTimeout, cancel)
	w, err := res.Watch(ctx, opts)
	timer.Stop()
	if err != nil {
		cancel()
		return nil, err
	}
	return &cancelOnStop{Interface: w, cancel: cancel}, nil
}

// cancelOnStop is a watch that ends its request's context when stopped.
type cancelOnStop struct {
	apiwatch.Interface
	cancel context.CancelFunc
}

func (c *cancelOnStop) Stop() {
	c.Interface.Stop()
	c.cancel()
}
