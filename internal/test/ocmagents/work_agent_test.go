package ocmagents_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/canopy-policy/canopy/internal/test/ocmagents"
	"github.com/canopy-policy/canopy/internal/test/testenv"
)

// TestWorkAgent checks that OCM's work agent applies a ManifestWork of the
// hub's cluster namespace to the managed cluster, reports it Applied, and
// removes what it applied when the ManifestWork goes.
func TestWorkAgent(t *testing.T) {
	g := NewWithT(t)
	start := time.Now()
	env := testenv.ForTest(t, testenv.Options{ManagedClusters: []string{"cluster1"}})
	logOnFailure(t, env)
	if err := ocmagents.StartWorkAgents(t.Context(), env); err != nil {
		t.Fatalf("starting the work agents: %v", err)
	}
	t.Logf("started a hub, a managed cluster and its work agent in %v", time.Since(start).Round(time.Millisecond))
	ctx, hub, managed := t.Context(), env.Hub.Client, env.Cluster("cluster1").Client

	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "from-the-hub", Namespace: "default"},
		Data:       map[string]string{"k": "v"},
	}
	work := &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{Name: "config", Namespace: "cluster1"},
		Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{
			{RawExtension: runtime.RawExtension{Object: cm}},
		}}},
	}
	g.Expect(hub.Create(ctx, work)).To(Succeed())

	got := &corev1.ConfigMap{}
	g.Eventually(func() error { return managed.Get(ctx, client.ObjectKeyFromObject(cm), got) }).
		WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(got.Data).To(Equal(cm.Data))
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(work), work)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(work.Status.Conditions, workv1.WorkApplied)).To(BeTrue())
	}).WithTimeout(30 * time.Second).Should(Succeed())
	// Note: the agent records what it applied, which it deletes with the
	// ManifestWork, only after it reports Applied: deleting the ManifestWork
	// before that would orphan the ConfigMap.
	g.Eventually(func(g Gomega) {
		applied := &workv1.AppliedManifestWorkList{}
		g.Expect(managed.List(ctx, applied)).To(Succeed())
		g.Expect(applied.Items).To(ContainElement(And(
			HaveField("Spec.ManifestWorkName", work.Name),
			HaveField("Status.AppliedResources", HaveLen(1)),
		)))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	g.Expect(hub.Delete(ctx, work)).To(Succeed())
	// Note: when the agent's cache did not hold its AppliedManifestWork yet,
	// the ConfigMap goes only once the eviction grace period of the
	// orphaned AppliedManifestWork has passed (see workAgent).
	g.Eventually(func() bool {
		return apierrors.IsNotFound(managed.Get(ctx, client.ObjectKeyFromObject(cm), got))
	}).WithTimeout(90 * time.Second).Should(BeTrue())
}
