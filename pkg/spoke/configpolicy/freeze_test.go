package configpolicy

import (
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
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
