package operatorpolicy

import (
	"fmt"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
)

// panicking holds the policies whose next evaluation panics, once.
var panicking sync.Map

func init() {
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
	panicking.Store(types.NamespacedName{Namespace: f.ns, Name: "install"}, true)
	f.policy(fmt.Sprintf(musthave, "inform", "None", "[]"))

	f.g.Eventually(func() bool {
		_, pending := panicking.Load(types.NamespacedName{Namespace: f.ns, Name: "install"})
		return pending
	},
		eventually, poll).Should(BeFalse(), "the first evaluation ran (and panicked)")
	f.g.Eventually(f.message("install"), eventually, poll).Should(HavePrefix("NonCompliant; the policy spec is valid, "+
		"the OperatorGroup required by the policy was not found"), "the status the panicking evaluation set")

	// The next evaluation runs: enforcing installs the operator.
	p := &policyv1beta1.OperatorPolicy{}
	f.g.Expect(f.c.Get(t.Context(), types.NamespacedName{Namespace: f.ns, Name: "install"}, p)).To(Succeed())
	p.Spec.RemediationAction = "enforce"
	f.g.Expect(f.c.Update(t.Context(), p)).To(Succeed())
	f.g.Eventually(f.message("install"), eventually, poll).Should(HavePrefix("Compliant; the policy spec is valid, " +
		"the OperatorGroup matches what is required by the policy"))
}
