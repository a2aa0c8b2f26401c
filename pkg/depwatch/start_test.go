package depwatch_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	depclient "github.com/stolostron/kubernetes-dependency-watches/client"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/pkg/depwatch"
)

// suite is an API server; the tests of the Lifecycle use fakes.
var suite = &controlplane.Suite{Name: "managed"}

func TestMain(m *testing.M) { suite.Main(m) }

// slowLists holds every LIST of one resource until released: a slow API
// server, as the dependency watcher's client sees it.
type slowLists struct {
	resource string
	// arrived receives each held LIST's path.
	arrived chan string
	release chan struct{}
}

func (s *slowLists) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		if req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/"+s.resource) && req.URL.Query().Get("watch") != "true" {
			s.arrived <- req.URL.Path
			select {
			case <-s.release:
			case <-req.Context().Done():
				return nil, req.Context().Err()
			}
		}
		return rt.RoundTrip(req)
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// events is a dependency watcher's reconciler: it receives the names of
// the watchers whose watched objects changed.
type events chan string

func (e events) Reconcile(_ context.Context, watcher depclient.ObjectIdentifier) (reconcile.Result, error) {
	e <- watcher.Name
	return reconcile.Result{}, nil
}

var (
	configMapGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	secretGVK    = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
)

func watcherID(name string) depclient.ObjectIdentifier {
	return depclient.ObjectIdentifier{Version: "v1", Kind: "ConfigMap", Namespace: "watchers", Name: name}
}

// read reads the objects names of kind gvk in ns within one query batch
// of watcher, and sends the error on done.
func read(w depclient.DynamicWatcher, watcher, ns string, gvk schema.GroupVersionKind, names ...string) <-chan error {
	done := make(chan error, 1)
	go func() {
		id := watcherID(watcher)
		if err := w.StartQueryBatch(id); err != nil {
			done <- err
			return
		}
		var err error
		for _, name := range names {
			if _, err = w.Get(id, gvk, ns, name); err != nil {
				break
			}
		}
		if endErr := w.EndQueryBatch(id); err == nil {
			err = endErr
		}
		done <- err
	}()
	return done
}

// TestSlowListDelaysNoOtherWatcher: while the LIST that starts one
// watcher's new watch hangs, another watcher starts a watch of its own and
// hears of a change of an object it watched already.
func TestSlowListDelaysNoOtherWatcher(t *testing.T) {
	g := NewWithT(t)
	cp := suite.Get(t)
	ns := controlplane.Namespace(t, cp.Client)
	for _, name := range []string{"watched", "new"} {
		g.Expect(cp.Client.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})).To(Succeed())
	}
	slow := &slowLists{resource: "secrets", arrived: make(chan string, 10), release: make(chan struct{})}
	cfg := rest.CopyConfig(cp.Config)
	cfg.Wrap(slow.wrap)
	heard := make(events, 100)
	w, err := depwatch.NewWatcher(cfg, heard, depclient.Options{DisableInitialReconcile: true})
	g.Expect(err).NotTo(HaveOccurred())
	l := depwatch.New(w)
	cancel, done := run(l)
	defer func() { cancel(); g.Eventually(done, time.Minute).Should(Receive(BeNil())) }()
	released := false
	defer func() { // first: the watcher stops once every LIST is answered
		if !released {
			close(slow.release)
		}
	}()
	g.Eventually(w.Started()).Should(BeClosed())

	g.Eventually(read(w, "b", ns, configMapGVK, "watched")).Should(Receive(BeNil()), "b watches a ConfigMap")
	a := read(w, "a", ns, secretGVK, "slow")
	g.Eventually(slow.arrived, 10*time.Second).Should(Receive(), "a's Secret LIST hangs")

	g.Eventually(read(w, "b", ns, configMapGVK, "watched", "new"), 20*time.Second).Should(Receive(BeNil()),
		"b starts a new watch while a's LIST hangs")
	cm := &corev1.ConfigMap{}
	g.Expect(cp.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "watched"}, cm)).To(Succeed())
	cm.Data = map[string]string{"changed": "yes"}
	g.Expect(cp.Client.Update(t.Context(), cm)).To(Succeed())
	g.Eventually(heard, 20*time.Second).Should(Receive(Equal("b")), "b hears of its ConfigMap's change while a's LIST hangs")
	g.Consistently(a, 100*time.Millisecond).ShouldNot(Receive(), "a still waits")

	close(slow.release)
	released = true
	g.Eventually(a, 20*time.Second).Should(Receive(BeNil()), "a reads its Secret once the LIST is answered")
}

// TestHungListTimesOut: a read whose watch cannot start, its LIST never
// answered, fails after StartTimeout instead of waiting for ever.
func TestHungListTimesOut(t *testing.T) {
	g := NewWithT(t)
	cp := suite.Get(t)
	ns := controlplane.Namespace(t, cp.Client)
	slow := &slowLists{resource: "secrets", arrived: make(chan string, 10), release: make(chan struct{})}
	cfg := rest.CopyConfig(cp.Config)
	cfg.Wrap(slow.wrap)
	w, err := depwatch.NewWatcher(cfg, make(events, 100), depclient.Options{DisableInitialReconcile: true})
	g.Expect(err).NotTo(HaveOccurred())
	cancel, done := run(depwatch.New(w))
	defer func() { cancel(); g.Eventually(done, time.Minute).Should(Receive(BeNil())) }()
	defer close(slow.release) // first
	g.Eventually(w.Started()).Should(BeClosed())

	a := read(w, "a", ns, secretGVK, "hung")
	var readErr error
	g.Eventually(a, 2*depwatch.StartTimeout).Should(Receive(&readErr))
	g.Expect(readErr).To(MatchError(context.DeadlineExceeded))
	g.Expect(readErr.Error()).To(ContainSubstring("listing secrets in \"" + ns + "\" to watch them"))
}
