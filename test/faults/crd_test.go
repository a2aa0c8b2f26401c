package faults

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/test/inproc"
)

// TestConfigurationPolicyCRDDeleted deletes the ConfigurationPolicy CRD
// under an enforced DeleteAll policy, as an uninstall does: the API server
// deletes the policy with its CRD, and the agent lets it go without pruning
// the object it manages (as OCM does). Deleting the policy itself prunes;
// deleting every policy at once by deleting their kind must not.
func TestConfigurationPolicyCRDDeleted(t *testing.T) {
	g := NewWithT(t)
	const cluster = "crd"
	cp := controlplane.ForTest(t, cluster)
	g.Expect(cp.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cluster}})).To(Succeed())
	inproc.StartEvaluators(t, cp.Config, cluster, nil)

	policy := &policyv1.ConfigurationPolicy{}
	g.Expect(yaml.Unmarshal([]byte(`
metadata: {name: keeper, namespace: crd}
spec:
  remediationAction: enforce
  pruneObjectBehavior: DeleteAll
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: precious, namespace: crd}, data: {k: v}}`), policy)).To(Succeed())
	g.Expect(cp.Client.Create(t.Context(), policy)).To(Succeed())
	cm := &corev1.ConfigMap{}
	cmKey := types.NamespacedName{Namespace: cluster, Name: "precious"}
	g.Eventually(func() error { return cp.Client.Get(t.Context(), cmKey, cm) }, time.Minute, 100*time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) []string {
		got := &policyv1.ConfigurationPolicy{}
		g.Expect(cp.Client.Get(t.Context(), types.NamespacedName{Namespace: cluster, Name: "keeper"}, got)).To(Succeed())
		return got.Finalizers
	}, time.Minute, 100*time.Millisecond).ShouldNot(BeEmpty(), "the policy holds the prune finalizer")

	crd := &apiextensionsv1.CustomResourceDefinition{}
	crd.Name = "configurationpolicies.policy.open-cluster-management.io"
	g.Expect(cp.Client.Delete(t.Context(), crd)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(cp.Client.Get(t.Context(), types.NamespacedName{Name: crd.Name}, crd))
	}, time.Minute, 200*time.Millisecond).Should(BeTrue(), "the CRD goes: the agent let its policy go")
	g.Consistently(func(g Gomega) types.UID {
		kept := &corev1.ConfigMap{}
		g.Expect(cp.Client.Get(t.Context(), cmKey, kept)).To(Succeed())
		return kept.UID
	}, 3*time.Second, 200*time.Millisecond).Should(Equal(cm.UID), "the object the policy managed is kept")
}
