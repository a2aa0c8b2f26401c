package propagator

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/replica"
)

func rootPolicy() *policyv1.Policy {
	return &policyv1.Policy{
		ObjectMeta: metav1.ObjectMeta{
			Name: "pol", Namespace: "ns", UID: "uid", ResourceVersion: "7", Generation: 3,
			Labels:          map[string]string{"team": "a", policyv1.GroupName + "/standards": "NIST"},
			Annotations:     map[string]string{"note": "x", policyv1.GroupName + "/categories": "CM", "kubectl.kubernetes.io/last-applied-configuration": "{}"},
			Finalizers:      []string{"example.com/f"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "o", UID: "o"}},
		},
		Spec: policyv1.PolicySpec{
			RemediationAction: policyv1.Inform,
			PolicyTemplates: []policyv1.PolicyTemplate{{
				ObjectDefinition:  runtime.RawExtension{Raw: []byte(`{"apiVersion":"policy.open-cluster-management.io/v1","kind":"ConfigurationPolicy","metadata":{"name":"t"}}`)},
				ExtraDependencies: []policyv1.PolicyDependency{{TypeMeta: metav1.TypeMeta{Kind: "Policy"}, Name: "dep", Compliance: policyv1.Compliant}},
			}},
		},
		Status: policyv1.PolicyStatus{ComplianceState: policyv1.NonCompliant, Placement: []policyv1.Placement{{PlacementBinding: "b"}}},
	}
}

func TestReplicaUpToDate(t *testing.T) {
	g := NewWithT(t)
	desired := replica.Build(rootPolicy(), Cluster{Name: "c1"}, nil)
	existing := desired.DeepCopy()
	existing.ResourceVersion = "9"
	existing.Status.ComplianceState = policyv1.Compliant
	g.Expect(ReplicaUpToDate(desired, existing)).To(BeTrue(), "status and server fields do not count")

	existing.Spec.PolicyTemplates[0].ObjectDefinition.Raw = []byte(`{"kind": "ConfigurationPolicy", "metadata": {"name": "t"},
		"apiVersion": "policy.open-cluster-management.io/v1"}`)
	g.Expect(ReplicaUpToDate(desired, existing)).To(BeTrue(), "the same template serialised differently")

	existing.Annotations = nil
	g.Expect(ReplicaUpToDate(desired, existing)).To(BeFalse())
	existing = desired.DeepCopy()
	existing.Labels["extra"] = "x"
	g.Expect(ReplicaUpToDate(desired, existing)).To(BeFalse())
	existing = desired.DeepCopy()
	existing.Spec.Disabled = true
	g.Expect(ReplicaUpToDate(desired, existing)).To(BeFalse())
}

func TestTrimPolicy(t *testing.T) {
	g := NewWithT(t)
	rep := replica.Build(rootPolicy(), Cluster{Name: "c1"}, nil)
	rep.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "m"}}
	rep.Status = policyv1.PolicyStatus{ComplianceState: policyv1.Compliant, Details: []policyv1.DetailsPerTemplate{{}}}
	out, err := TrimPolicy(rep)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.(*policyv1.Policy).ManagedFields).To(BeNil())
	g.Expect(out.(*policyv1.Policy).Status).To(Equal(policyv1.PolicyStatus{ComplianceState: policyv1.Compliant}))

	root := rootPolicy()
	root.Status.Details = []policyv1.DetailsPerTemplate{{}}
	out, _ = TrimPolicy(root)
	g.Expect(out.(*policyv1.Policy).Status.Details).To(HaveLen(1), "roots keep their status")
}
