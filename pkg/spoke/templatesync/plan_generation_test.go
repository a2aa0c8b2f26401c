package templatesync

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/compliance"
	"github.com/canopy-policy/canopy/pkg/replica"
)

// TestPlanCarriesPolicyGeneration: a template object carries the Policy's
// generation, within the hash the evaluators report, so that a change of
// the Policy that leaves the template's content as it was (here only
// ignorePending) still gives the object a new version to evaluate.
func TestPlanCarriesPolicyGeneration(t *testing.T) {
	g := NewWithT(t)
	p := &policyv1.Policy{}
	p.Namespace, p.Name, p.Generation = "c1", "p", 3
	p.Spec.PolicyTemplates = []policyv1.PolicyTemplate{{ObjectDefinition: runtime.RawExtension{Raw: []byte(
		`{"apiVersion":"policy.open-cluster-management.io/v1","kind":"ConfigurationPolicy","metadata":{"name":"a"},"spec":{}}`)}}}
	in := Inputs{TemplateKinds: map[schema.GroupKind]bool{{Group: policyv1.GroupName, Kind: "ConfigurationPolicy"}: true}}

	first := Plan(p, in)[0].Object.GetAnnotations()
	g.Expect(first).To(HaveKeyWithValue(replica.PolicyGenerationAnnotation, "3"))
	g.Expect(Plan(p, in)[0].Object.GetAnnotations()).To(Equal(first), "planning is deterministic")

	p.Generation, p.Spec.PolicyTemplates[0].IgnorePending = 4, true
	next := Plan(p, in)[0].Object.GetAnnotations()
	g.Expect(next).To(HaveKeyWithValue(replica.PolicyGenerationAnnotation, "4"))
	g.Expect(next[compliance.TemplateHashAnnotation]).NotTo(Equal(first[compliance.TemplateHashAnnotation]))
}
