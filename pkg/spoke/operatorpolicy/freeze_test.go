package operatorpolicy

import (
	"fmt"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/internal/test/olmsim"
)

// panicking holds the policies whose next evaluation panics, once.
var panicking sync.Map

// lagging holds the namespaces whose OperatorGroups the evaluations'
// reads never see: the watcher's cache lags the API server.
var lagging sync.Map

// laggingReader reads through read, except the OperatorGroups of the
// lagging namespaces, which it never sees.
type laggingReader struct{ read reader }

func (l laggingReader) get(gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, error) {
	return l.read.get(gvk, ns, name)
}

func (l laggingReader) list(gvk schema.GroupVersionKind, ns string, sel labels.Selector) ([]unstructured.Unstructured, error) {
	if _, lags := lagging.Load(ns); lags && gvk == operatorGroupGVK {
		return nil, nil
	}
	return l.read.list(gvk, ns, sel)
}

func init() {
	cached = func(r reader) reader { return laggingReader{read: r} }
	evaluated = func(p *policyv1beta1.OperatorPolicy) {
		if _, ok := panicking.LoadAndDelete(types.NamespacedName{Namespace: p.Namespace, Name: p.Name}); ok {
			panic("an evaluation panics (test)")
		}
	}
}

// TestPanicDoesNotFreeze: an evaluation that panics within the dependency
// watcher's query batch ends the batch, so that the next evaluation of the
// policy runs and writes its status.
func TestPanicDoesNotFreeze(t *testing.T) {
	f := newFixture(t, "panics", "v1")
	key := types.NamespacedName{Namespace: f.ns, Name: "install"}
	panicking.Store(key, true)
	f.policy(fmt.Sprintf(musthave, "inform", "None", "[]"))

	f.g.Eventually(func() bool { _, pending := panicking.Load(key); return pending }, eventually, poll).Should(BeFalse(), "the first evaluation ran (and panicked)")
	f.g.Eventually(f.message("install"), eventually, poll).Should(HavePrefix("NonCompliant; the policy spec is valid, "+
		"the OperatorGroup required by the policy was not found"), "the status the panicking evaluation set")

	// The next evaluation runs: enforcing installs the operator.
	p := &policyv1beta1.OperatorPolicy{}
	f.g.Expect(f.c.Get(t.Context(), key, p)).To(Succeed())
	p.Spec.RemediationAction = "enforce"
	f.g.Expect(f.c.Update(t.Context(), p)).To(Succeed())
	f.g.Eventually(f.message("install"), eventually, poll).Should(HavePrefix("Compliant; the policy spec is valid, " +
		"the OperatorGroup matches what is required by the policy"))
}

// TestLaggingCacheMakesOneOperatorGroup: an enforced policy whose reads
// never see the default OperatorGroup it created (the watcher's cache lags
// the API server) creates no second one, which OLM would refuse forever
// (TooManyOperatorGroups).
func TestLaggingCacheMakesOneOperatorGroup(t *testing.T) {
	f := newFixture(t, "lagging", "v1")
	lagging.Store(f.ns, true)
	f.policy(fmt.Sprintf(musthave, "enforce", "None", "[]"))

	f.g.Eventually(f.list(olmsim.SubscriptionGVK), eventually, poll).ShouldNot(BeEmpty())
	f.g.Consistently(f.list(olmsim.OperatorGroupGVK), quiet, poll).Should(ConsistOf(HavePrefix(f.ns + "-")))
	f.g.Eventually(f.message("install"), eventually, poll).Should(HavePrefix("Compliant; the policy spec is valid, " +
		"the OperatorGroup matches what is required by the policy, the Subscription matches what is required by the policy"))
}
