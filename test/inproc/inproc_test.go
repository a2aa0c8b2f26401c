package inproc_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/test/inproc"
)

// keepFinalizer holds the test's replica, which has no root: the propagator
// deletes such replicas, and the test reads it while it is Terminating.
const keepFinalizer = "test.canopy.io/keep"

// TestHubCacheIsProduction checks that the hub inproc runs reads through
// the cache cmd/hub configures (hub.CacheOptions): a replica's compliance
// history and every object's managedFields are trimmed in the cache, while
// the API server keeps them.
func TestHubCacheIsProduction(t *testing.T) {
	controlplane.SetTestLogger()
	g := NewWithT(t)
	cp, err := controlplane.Start(t.Context(), "hub")
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(cp.Stop()).To(Succeed()) })
	ns := controlplane.Namespace(t, cp.Client)
	replica := reportedReplica(t, cp.Client, ns)

	running, err := inproc.RunHub(context.Background(), cp.Config, inproc.HubOptions())
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(running.Stop()).To(Succeed()) })

	cached := &policyv1.Policy{}
	g.Eventually(func(g Gomega) {
		g.Expect(running.Manager.GetClient().Get(t.Context(), client.ObjectKeyFromObject(replica), cached)).To(Succeed())
		g.Expect(cached.Status.ComplianceState).To(Equal(policyv1.NonCompliant))
	}).WithTimeout(time.Minute).Should(Succeed())
	g.Expect(cached.Status.Details).To(BeEmpty(), "the hub cache trims the compliance history of replicas")
	g.Expect(cached.ManagedFields).To(BeEmpty(), "the hub cache strips managedFields")

	stored := &policyv1.Policy{}
	g.Expect(running.Manager.GetAPIReader().Get(t.Context(), client.ObjectKeyFromObject(replica), stored)).To(Succeed())
	g.Expect(stored.Status.Details).To(HaveLen(1), "the API server keeps the history")
	g.Expect(stored.ManagedFields).NotTo(BeEmpty())
}

// reportedReplica creates a replica in ns whose status carries a compliance
// history, as an agent reports it. The replica is removed when the test ends.
func reportedReplica(t *testing.T, c client.Client, ns string) *policyv1.Policy {
	g := NewWithT(t)
	replica := &policyv1.Policy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "root-ns.root", Finalizers: []string{keepFinalizer},
			Labels: map[string]string{policyv1.RootPolicyLabel: "root-ns.root"}},
		Spec: policyv1.PolicySpec{RemediationAction: policyv1.Inform, PolicyTemplates: []policyv1.PolicyTemplate{{
			ObjectDefinition: runtime.RawExtension{Raw: []byte(`{"apiVersion":"policy.open-cluster-management.io/v1",` +
				`"kind":"ConfigurationPolicy","metadata":{"name":"template"},"spec":{"remediationAction":"inform","object-templates":[]}}`)},
		}}},
	}
	g.Expect(c.Create(t.Context(), replica)).To(Succeed())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		release := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
		g.Expect(client.IgnoreNotFound(c.Patch(ctx, replica.DeepCopy(), release))).To(Succeed())
	})
	replica.Status = policyv1.PolicyStatus{
		ComplianceState: policyv1.NonCompliant,
		Details: []policyv1.DetailsPerTemplate{{
			TemplateMeta:    metav1.ObjectMeta{Name: "template"},
			ComplianceState: policyv1.NonCompliant,
			History:         []policyv1.ComplianceHistory{{LastTimestamp: metav1.Now(), Message: "NonCompliant; reported by the test"}},
		}},
	}
	g.Expect(c.Status().Update(t.Context(), replica)).To(Succeed())
	return replica
}
