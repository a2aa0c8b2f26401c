package security

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/pkg/spoke"
	"github.com/canopy-policy/canopy/test/inproc"
)

// TestPolicyScope creates the same enforced ConfigurationPolicy in the
// cluster namespace, in OCM's namespace for a cluster's own policies and in
// another namespace, under the agent's manager options: only the first two
// are evaluated. Someone who may create a ConfigurationPolicy elsewhere
// cannot have it enforced with the agent's rights.
func TestPolicyScope(t *testing.T) {
	g := NewWithT(t)
	const cluster = "scope"
	cp := controlplane.ForTest(t, cluster)
	namespaces := []string{cluster, spoke.LocalPolicyNamespace, "elsewhere"}
	for _, ns := range append(namespaces, "target") {
		g.Expect(cp.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
	inproc.StartEvaluators(t, cp.Config, cluster, nil)

	for _, ns := range namespaces {
		policy := &policyv1.ConfigurationPolicy{}
		g.Expect(yaml.Unmarshal(fmt.Appendf(nil, `
metadata: {name: writer, namespace: %s}
spec:
  remediationAction: enforce
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: from-%s, namespace: target}}`, ns, ns), policy)).To(Succeed())
		g.Expect(cp.Client.Create(t.Context(), policy)).To(Succeed())
	}
	state := func(ns string) func(Gomega) policyv1.ComplianceState {
		return func(g Gomega) policyv1.ComplianceState {
			p := &policyv1.ConfigurationPolicy{}
			g.Expect(cp.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "writer"}, p)).To(Succeed())
			return p.Status.ComplianceState
		}
	}
	g.Eventually(state(cluster), time.Minute, 100*time.Millisecond).Should(Equal(policyv1.Compliant))
	g.Eventually(state(spoke.LocalPolicyNamespace), time.Minute, 100*time.Millisecond).Should(Equal(policyv1.Compliant))
	g.Consistently(state("elsewhere"), 3*time.Second, 200*time.Millisecond).Should(BeEmpty(), "never evaluated")
	cm := &corev1.ConfigMap{}
	g.Expect(cp.Client.Get(t.Context(), types.NamespacedName{Namespace: "target", Name: "from-elsewhere"}, cm)).NotTo(Succeed(),
		"nothing enforced for a policy outside the agent's namespaces")
}
