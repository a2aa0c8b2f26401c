package propagator_test

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/canopy-policy/canopy/pkg/hub/propagator"
	"github.com/canopy-policy/canopy/pkg/templating"
)

// TestHubTemplatesDeniedFunction resolves a hub template that calls a
// function the hub's --template-function-denylist names (the suite's hub
// denies deniedFunction): the template fails with the library's
// ErrDenylistedFunctionUsed message (go-template-utils
// pkg/templates/templates.go: "use of denylisted template function:
// function '%s' is not allowed"), annotated on the replica's template, left
// as the root wrote it, and in the root's HubTemplateError condition; a
// function the list does not name resolves.
func TestHubTemplatesDeniedFunction(t *testing.T) {
	ns := newNamespace(t)
	placeOn(t, ns, "pl", "cluster-a")
	create(t,
		templatePolicy(ns, "denied", map[string]string{"sum": `{{hub "x" | ` + deniedFunction + ` hub}}`}),
		templatePolicy(ns, "allowed", map[string]string{"sum": `{{hub "x" | sha256sum hub}}`}),
		newBinding(ns, "pb", "pl", policySubject("denied"), policySubject("allowed")))

	const msg = "use of denylisted template function: function '" + deniedFunction + "' is not allowed"
	expectCondition(t, ns, "denied", propagator.ReasonHubTemplateError, "cluster-a: ", msg)
	g := NewWithT(t)
	tmpl := replicaTemplate(g, "cluster-a", ns, "denied")
	g.Expect(tmpl.annotations).To(HaveKeyWithValue(templating.HubTemplatesErrorAnnotation, ContainSubstring(msg)))
	g.Expect(tmpl.data).To(HaveKeyWithValue("sum", `{{hub "x" | `+deniedFunction+` hub}}`), "left as the root wrote it")
	expectEvent(t, ns, "denied", "Failed to resolve templates for cluster cluster-a: ")

	expectCondition(t, ns, "allowed", propagator.ReasonPropagated)
	g.Eventually(func(g Gomega) {
		g.Expect(replicaTemplate(g, "cluster-a", ns, "allowed").data).To(HaveKeyWithValue("sum",
			"2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"))
	}).Should(Succeed())
}
