package operatorpolicy

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/internal/test/olmsim"
)

// TestDeliveredByPolicy: a Policy with an OperatorPolicy template (as the
// hub delivers it) gets its OperatorPolicy created by templatesync, which
// this controller evaluates and enforces; the compliance events on the
// Policy name the OperatorPolicy as their related object.
func TestDeliveredByPolicy(t *testing.T) {
	f := newFixture(t, "mu", "v1")
	policy := &policyv1.Policy{}
	f.g.Expect(yaml.UnmarshalStrict([]byte(`
metadata: {name: operators}
spec:
  remediationAction: enforce
  policy-templates:
  - objectDefinition:
      apiVersion: policy.open-cluster-management.io/v1beta1
      kind: OperatorPolicy
      metadata: {name: mu}
      spec:
        remediationAction: inform
        complianceType: musthave
        upgradeApproval: Automatic
        subscription: {namespace: `+f.ns+`, name: mu, channel: stable, source: catalog, sourceNamespace: `+f.ns+`}
`), policy)).To(Succeed())
	policy.Namespace = f.ns
	f.g.Expect(f.c.Create(t.Context(), policy)).To(Succeed())

	f.g.Eventually(f.message("mu"), eventually, poll).Should(HavePrefix("Compliant; the policy spec is valid"))
	f.g.Expect(f.object(olmsim.CSVGVK, "mu.v1")(f.g)).NotTo(BeNil())
	related := func(g Gomega) []string {
		list := &corev1.EventList{}
		g.Expect(f.c.List(t.Context(), list, client.InNamespace(f.ns))).To(Succeed())
		var out []string
		for _, ev := range list.Items {
			if ev.InvolvedObject.Name == "operators" && ev.Related != nil {
				out = append(out, ev.Related.Kind+"/"+ev.Related.Name)
			}
		}
		return out
	}
	f.g.Eventually(related, eventually, poll).Should(ContainElement(policyv1beta1.OperatorPolicyKind + "/mu"))
}
