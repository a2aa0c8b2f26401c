package templatekinds

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestEvaluated(t *testing.T) {
	g := NewWithT(t)
	g.Expect(List()).To(Equal("ConfigurationPolicy, CertificatePolicy, OperatorPolicy and HierarchyPolicy"))
	g.Expect(IsEvaluated(schema.GroupKind{Group: "policy.open-cluster-management.io", Kind: "CertificatePolicy"})).To(BeTrue())
	g.Expect(IsEvaluated(schema.GroupKind{Group: "example.com", Kind: "CertificatePolicy"})).To(BeFalse())
	set := Evaluated()
	g.Expect(set).To(HaveLen(4))
	delete(set, schema.GroupKind{Group: "hierarchy.canopy.io", Kind: "HierarchyPolicy"})
	g.Expect(Evaluated()).To(HaveLen(4), "callers get a copy")
}
