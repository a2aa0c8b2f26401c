package configpolicy

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/pkg/spoke/internal/evaluator/evaluatortest"
)

// panicking holds the policies whose next evaluation panics, once.
var panicking sync.Map

func init() {
	evaluated = func(p *policyv1.ConfigurationPolicy) {
		if _, ok := panicking.LoadAndDelete(types.NamespacedName{Namespace: p.Namespace, Name: p.Name}); ok {
			panic("an evaluation panics (test)")
		}
	}
}

// TestPanicDoesNotFreeze: an evaluation that panics within the dependency
// watcher's query batch ends the batch, so that the next evaluation of the
// policy runs: the status follows the watched ConfigMap.
func TestPanicDoesNotFreeze(t *testing.T) {
	f := newFixture(t)
	key := types.NamespacedName{Namespace: f.ns, Name: "panics"}
	panicking.Store(key, true)
	f.policy(`
metadata: {name: panics}
spec:
  remediationAction: inform
  object-templates:
  - complianceType: musthave
    objectDefinition:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: panics, namespace: $NS}`)
	f.g.Eventually(func() bool { _, pending := panicking.Load(key); return pending }, eventually, poll).
		Should(BeFalse(), "the first evaluation ran (and panicked)")

	f.object(&corev1.ConfigMap{}, `{metadata: {name: panics}}`)
	f.g.Eventually(f.message("panics"), eventually, poll).Should(Equal(
		"Compliant: configmaps [panics] found as specified in namespace " + f.ns))
}

// slowLists holds the controller's LISTs of the ConfigMaps of the
// namespaces a test names, until the test releases them: a slow API
// server, as the controller sees it.
var slowLists = &heldLists{held: map[string]chan struct{}{}, arrived: map[string]chan struct{}{}}

type heldLists struct {
	mu sync.Mutex
	// held has a channel per namespace, closed to release its LISTs.
	held map[string]chan struct{}
	// arrived has a channel per namespace, closed once a LIST is held.
	arrived map[string]chan struct{}
}

// hold holds the LISTs of the ConfigMaps of ns until release is called;
// arrived is closed once one is held.
func (h *heldLists) hold(ns string) (arrived <-chan struct{}, release func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	held, a := make(chan struct{}), make(chan struct{})
	h.held[ns], h.arrived[ns] = held, a
	return a, sync.OnceFunc(func() { close(held) })
}

func (h *heldLists) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		rest, namespaced := strings.CutPrefix(req.URL.Path, "/api/v1/namespaces/")
		ns, configMaps := strings.CutSuffix(rest, "/configmaps")
		if req.Method == http.MethodGet && namespaced && configMaps && req.URL.Query().Get("watch") != "true" {
			h.mu.Lock()
			held, arrived := h.held[ns], h.arrived[ns]
			if arrived != nil {
				select {
				case <-arrived:
				default:
					close(arrived)
				}
			}
			h.mu.Unlock()
			if held != nil {
				select {
				case <-held:
				case <-req.Context().Done():
					return nil, req.Context().Err()
				}
			}
		}
		return rt.RoundTrip(req)
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// TestSlowListDelaysNoOtherPolicy: while the LIST that starts the watch of
// one policy's object hangs, another policy is evaluated.
func TestSlowListDelaysNoOtherPolicy(t *testing.T) {
	f := newFixture(t)
	arrived, release := slowLists.hold(f.ns)
	t.Cleanup(release)
	f.policy(`
metadata: {name: slow}
spec:
  remediationAction: inform
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: slow, namespace: $NS}}`)
	f.g.Eventually(arrived, eventually, poll).Should(BeClosed(), "the LIST of the policy's ConfigMap hangs")

	other := &fixture{t: t, g: f.g, c: f.c, ns: controlplane.Namespace(t, f.c)}
	other.parent = evaluatortest.Parent(t, f.c, other.ns)
	other.policy(`
metadata: {name: fast}
spec:
  remediationAction: inform
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: fast, namespace: $NS}}`)
	f.g.Eventually(other.message("fast"), eventually, poll).Should(Equal(
		"NonCompliant: configmaps [fast] not found in namespace "+other.ns), "evaluated while the other LIST hangs")
	f.g.Expect(f.message("slow")(f.g)).To(BeEmpty(), "still waiting")

	release()
	f.g.Eventually(f.message("slow"), eventually, poll).Should(Equal(
		"NonCompliant: configmaps [slow] not found in namespace " + f.ns))
}
