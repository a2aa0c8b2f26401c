package operatorpolicy

import (
	"testing"

	. "github.com/onsi/gomega"
	depclient "github.com/stolostron/kubernetes-dependency-watches/client"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
)

// fakeReader is a cluster with namespaces and nothing of OLM's, or without
// OLM's kinds at all.
type fakeReader struct{ olm bool }

func (f fakeReader) get(gvk schema.GroupVersionKind, _, name string) (*unstructured.Unstructured, error) {
	if gvk == namespaceGVK {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(gvk)
		obj.SetName(name)
		return obj, nil
	}
	if !f.olm {
		return nil, depclient.ErrNoVersionedResource
	}
	return nil, nil
}

func (f fakeReader) list(gvk schema.GroupVersionKind, _ string, _ labels.Selector) ([]unstructured.Unstructured, error) {
	if !f.olm && gvk.Group == "operators.coreos.com" {
		return nil, depclient.ErrNoVersionedResource
	}
	return nil, nil
}

func TestWithoutOLM(t *testing.T) {
	g := NewWithT(t)
	p := &policyv1beta1.OperatorPolicy{Spec: policyv1beta1.OperatorPolicySpec{
		RemediationAction: "enforce", ComplianceType: "musthave", UpgradeApproval: "None",
		Subscription: runtime.RawExtension{Raw: []byte(`{"namespace":"ns","name":"a","channel":"stable","source":"c","sourceNamespace":"ns"}`)},
	}}
	e := &evaluation{policy: p, read: fakeReader{}, now: metav1.Now()}
	g.Expect(e.run(t.Context())).To(Succeed())
	g.Expect(e.recheck).To(BeTrue(), "CRDs are not watched")
	g.Expect(p.Status.ComplianceState).To(Equal(policyv1.NonCompliant))
	g.Expect(eventMessage(p)).To(Equal("the OLM kinds (operators.coreos.com) are not served on this cluster: " +
		"install the Operator Lifecycle Manager"))
}

func TestInformWritesNothing(t *testing.T) {
	g := NewWithT(t)
	p := &policyv1beta1.OperatorPolicy{Spec: policyv1beta1.OperatorPolicySpec{
		RemediationAction: "inform", ComplianceType: "musthave", UpgradeApproval: "Automatic",
		Subscription: runtime.RawExtension{Raw: []byte(`{"namespace":"ns","name":"a","channel":"stable","source":"c","sourceNamespace":"ns"}`)},
	}}
	// Note: a nil dynamic client panics on any write.
	e := &evaluation{policy: p, read: fakeReader{olm: true}, now: metav1.Now()}
	g.Expect(e.run(t.Context())).To(Succeed())
	g.Expect(e.remediated).To(BeFalse())
	g.Expect(eventMessage(p)).To(HavePrefix("the policy spec is valid, the OperatorGroup required by the policy was not found"))
}
