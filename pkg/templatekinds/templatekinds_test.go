package templatekinds

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestEvaluated(t *testing.T) {
	g := NewWithT(t)
	g.Expect(List()).To(Equal("ConfigurationPolicy, CertificatePolicy, OperatorPolicy, HierarchyPolicy and Gatekeeper's ConstraintTemplates and constraints"))
	g.Expect(IsEvaluated(schema.GroupKind{Group: "policy.open-cluster-management.io", Kind: "CertificatePolicy"})).To(BeTrue())
	g.Expect(IsEvaluated(schema.GroupKind{Group: "example.com", Kind: "CertificatePolicy"})).To(BeFalse())
	set := Evaluated()
	g.Expect(set).To(HaveLen(4))
	delete(set, schema.GroupKind{Group: "hierarchy.canopy.io", Kind: "HierarchyPolicy"})
	g.Expect(Evaluated()).To(HaveLen(4), "callers get a copy")
}

// The messages are OCM's, from open-cluster-management-io/
// governance-policy-framework-addon, controllers/templatesync/template_sync.go
// ("Mapping not found, check if Gatekeeper is installed" and "..., check if
// the required ConstraintTemplate has been deployed", followed by the error
// of controllers/utils/utils.go's GVRFromGVK, "the resource version was not
// found: <gvk>").
func TestGatekeeperUnmappedMessage(t *testing.T) {
	g := NewWithT(t)
	ct := schema.GroupVersionKind{Group: "templates.gatekeeper.sh", Version: "v1", Kind: "ConstraintTemplate"}
	c := schema.GroupVersionKind{Group: "constraints.gatekeeper.sh", Version: "v1beta1", Kind: "K8sRequiredLabels"}
	g.Expect(GatekeeperUnmappedMessage(ct, false)).To(Equal(
		"Mapping not found, check if Gatekeeper is installed: the resource version was not found: templates.gatekeeper.sh/v1, Kind=ConstraintTemplate"))
	g.Expect(GatekeeperUnmappedMessage(c, false)).To(Equal(
		"Mapping not found, check if Gatekeeper is installed: the resource version was not found: constraints.gatekeeper.sh/v1beta1, Kind=K8sRequiredLabels"))
	g.Expect(GatekeeperUnmappedMessage(c, true)).To(Equal("Mapping not found, check if the required ConstraintTemplate has been deployed: " +
		"the resource version was not found: constraints.gatekeeper.sh/v1beta1, Kind=K8sRequiredLabels"))
	g.Expect(IsGatekeeper(ct.GroupKind())).To(BeTrue())
	g.Expect(IsGatekeeper(c.GroupKind())).To(BeTrue())
	g.Expect(IsGatekeeper(schema.GroupKind{Group: "templates.gatekeeper.sh", Kind: "Other"})).To(BeFalse())
	g.Expect(ClusterScoped(schema.GroupKind{Group: "policy.open-cluster-management.io", Kind: "ConfigurationPolicy"})).To(BeFalse())
	g.Expect(ConstraintCRDName("K8sRequiredLabels")).To(Equal("k8srequiredlabels.constraints.gatekeeper.sh"))
}

// OCM's overrideRemediationAction (controllers/templatesync/template_sync.go):
// inform → warn, enforce → deny, a ConstraintTemplate untouched.
func TestSetGatekeeperEnforcementAction(t *testing.T) {
	g := NewWithT(t)
	obj := func(apiVersion, kind string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "spec": map[string]any{}}}
	}
	c := obj("constraints.gatekeeper.sh/v1beta1", "K8sRequiredLabels")
	SetGatekeeperEnforcementAction(c, "Inform")
	g.Expect(c.Object["spec"]).To(HaveKeyWithValue("enforcementAction", "warn"))
	SetGatekeeperEnforcementAction(c, "enforce")
	g.Expect(c.Object["spec"]).To(HaveKeyWithValue("enforcementAction", "deny"))
	SetGatekeeperEnforcementAction(c, "")
	g.Expect(c.Object["spec"]).To(HaveKeyWithValue("enforcementAction", "deny"))
	ct := obj("templates.gatekeeper.sh/v1", "ConstraintTemplate")
	SetGatekeeperEnforcementAction(ct, "enforce")
	g.Expect(ct.Object["spec"]).To(BeEmpty())
}
