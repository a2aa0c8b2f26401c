package templatesync_test

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/spoke/templatesync"
)

// A template whose kind has no template CRD on the cluster is planned as a
// Problem saying that nothing evaluates it; for one of Canopy's own kinds,
// the message says to install the agent's CRDs.
func TestPlanUnevaluatedKinds(t *testing.T) {
	tests := []struct {
		name, apiVersion, kind, want string
	}{{
		name: "a kind Canopy evaluates, CRD missing", apiVersion: "policy.open-cluster-management.io/v1", kind: "CertificatePolicy",
		want: "template-error; Mapping not found, check if you have the CRD deployed: no controller on this cluster evaluates " +
			"CertificatePolicy.policy.open-cluster-management.io: the Canopy agent evaluates it, but its CustomResourceDefinition " +
			"(with the label policy.open-cluster-management.io/policy-type=template) is not installed; install the agent's CRDs",
	}, {
		name: "another controller's kind", apiVersion: "example.com/v1", kind: "FooPolicy",
		want: notSupported("FooPolicy.example.com"),
	}, {
		name: "a core kind", apiVersion: "v1", kind: "ConfigMap",
		want: notSupported("ConfigMap"),
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			raw := `{"apiVersion":"` + tc.apiVersion + `","kind":"` + tc.kind + `","metadata":{"name":"t"},"spec":{}}`
			p := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "p"}}
			p.Spec.PolicyTemplates = []policyv1.PolicyTemplate{{ObjectDefinition: runtime.RawExtension{Raw: []byte(raw)}}}
			plan := templatesync.Plan(p, inputs())
			g.Expect(plan).To(HaveLen(1))
			g.Expect(plan[0].Problem).To(Equal(tc.want))
			g.Expect(plan[0].Object).To(BeNil())
		})
	}
}
