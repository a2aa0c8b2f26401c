package templatesync_test

import (
	"encoding/json"
	"os"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/templating"
)

// misplaced is the template of sample-network-policy-99 whose object-templates
// entry holds fields the ConfigurationPolicy schema does not have, and
// unknownFields the API server's words for them under strict validation.
const (
	misplaced     = "allow-pod-and-namespace-both"
	unknownFields = `strict decoding error: unknown field "spec.object-templates[0].remediationAction", ` +
		`unknown field "spec.object-templates[0].severity"`
)

// publicPolicy reads sample-network-policy-99 from the policy-collection as
// the replica of cluster c.
func (c *cluster) publicPolicy(t *testing.T) *policyv1.Policy {
	t.Helper()
	g := NewWithT(t)
	data, err := os.ReadFile("testdata/sample-network-policy-99.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	p := &policyv1.Policy{}
	g.Expect(yaml.Unmarshal(data, p)).To(Succeed())
	replica := c.replica(p.Name, nil)
	replica.Spec = p.Spec
	return replica
}

// withoutMisplacedFields returns p with the unknown fields of its misplaced
// template removed: the policy as its author meant it.
func withoutMisplacedFields(t *testing.T, p *policyv1.Policy) *policyv1.Policy {
	t.Helper()
	g := NewWithT(t)
	fixed := p.DeepCopy()
	last := &fixed.Spec.PolicyTemplates[len(fixed.Spec.PolicyTemplates)-1]
	obj := map[string]any{}
	g.Expect(json.Unmarshal(last.ObjectDefinition.Raw, &obj)).To(Succeed())
	entry := obj["spec"].(map[string]any)["object-templates"].([]any)[0].(map[string]any)
	g.Expect(entry).To(HaveKey("severity"))
	delete(entry, "severity")
	delete(entry, "remediationAction")
	raw, err := json.Marshal(obj)
	g.Expect(err).NotTo(HaveOccurred())
	last.ObjectDefinition = runtime.RawExtension{Raw: raw}
	return fixed
}

// A public policy whose template has fields its kind's schema does not
// know is treated as OCM's framework-addon (v0.17.0 and later) treats it:
// the template is not created, and it is reported NonCompliant in OCM's
// words ("template-error; Failed to create policy template: <API error>",
// controllers/templatesync/template_sync.go), the API server's error
// naming each unknown field. The policy's other templates are created and
// evaluated.
func TestUnknownFieldsRefusedAsOCM(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(t)
	policy := c.publicPolicy(t)
	c.create(t, policy)
	g.Eventually(c.hubStatus(t.Context(), policy.Name)).WithContext(t.Context()).Should(SatisfyAll(
		WithTransform(compliant, Equal(policyv1.NonCompliant)),
		WithTransform(latestOf("allow-http-and-https"), Equal("Compliant; fake evaluation")),
		WithTransform(latestOf("deny-all"), Equal("Compliant; fake evaluation")),
		WithTransform(latestOf("allow-same-namespace"), Equal("Compliant; fake evaluation")),
		WithTransform(latestOf(misplaced), SatisfyAll(
			HavePrefix("NonCompliant; "+templating.TemplateErrorPrefix+"Failed to create policy template: "),
			HaveSuffix(unknownFields))),
	))
	g.Expect(c.templateExists(t.Context(), misplaced)()).To(BeFalse())
}

// The same template changed to hold unknown fields after it was created is
// not updated: the object stays as it was, and the template is reported
// NonCompliant in OCM's words ("template-error; Failed to update policy
// template <name>: <API error>", controllers/templatesync/template_sync.go).
func TestUnknownFieldsUpdateRefusedAsOCM(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(t)
	public := c.publicPolicy(t)
	c.create(t, withoutMisplacedFields(t, public))
	g.Eventually(c.hubStatus(t.Context(), public.Name)).WithContext(t.Context()).Should(
		WithTransform(compliant, Equal(policyv1.Compliant)))
	before := &policyv1.ConfigurationPolicy{}
	g.Expect(c.managed.Get(t.Context(), client.ObjectKey{Namespace: c.ns, Name: misplaced}, before)).To(Succeed())

	g.Eventually(func(g Gomega) {
		p := &policyv1.Policy{}
		g.Expect(c.hub.Get(t.Context(), client.ObjectKey{Namespace: c.ns, Name: public.Name}, p)).To(Succeed())
		p.Spec.PolicyTemplates = public.Spec.PolicyTemplates
		g.Expect(c.hub.Update(t.Context(), p)).To(Succeed())
	}).WithContext(t.Context()).Should(Succeed())
	g.Eventually(c.hubStatus(t.Context(), public.Name)).WithContext(t.Context()).Should(SatisfyAll(
		WithTransform(compliant, Equal(policyv1.NonCompliant)),
		WithTransform(latestOf(misplaced), SatisfyAll(
			HavePrefix("NonCompliant; "+templating.TemplateErrorPrefix+"Failed to update policy template "+misplaced+": "),
			HaveSuffix(unknownFields))),
	))
	after := &policyv1.ConfigurationPolicy{}
	g.Expect(c.managed.Get(t.Context(), client.ObjectKey{Namespace: c.ns, Name: misplaced}, after)).To(Succeed())
	g.Expect(after.Spec).To(Equal(before.Spec))
}
