package ocmagents_test

import (
	"context"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/internal/test/ocmagents"
	"github.com/canopy-policy/canopy/internal/test/testenv"
)

func TestPlacementController(t *testing.T) {
	start := time.Now()
	// Note: RegisterCluster needs no API server for a cluster: the hub alone
	// is enough to test placement.
	env := testenv.ForTest(t, testenv.Options{ManagedClusters: []string{}})
	logOnFailure(t, env)
	if err := ocmagents.StartPlacementController(t.Context(), env); err != nil {
		t.Fatalf("starting the placement controller: %v", err)
	}
	t.Logf("started a hub with the placement controller in %v", time.Since(start).Round(time.Millisecond))
	c := env.Hub.Client
	for name, environment := range map[string]string{"dev1": "dev", "dev2": "dev", "prod1": "prod"} {
		if _, err := env.RegisterCluster(t.Context(), name); err != nil {
			t.Fatal(err)
		}
		setClusterLabel(t, c, name, "environment", environment)
	}
	bound := controlplane.Namespace(t, c)
	bind(t, c, bound, ocmagents.DefaultClusterSet)

	t.Run("label selector and cluster sets", func(t *testing.T) {
		g := NewWithT(t)
		createPlacement(t, c, bound, "dev", nil)
		g.Eventually(decidedClusters(t.Context(), c, bound, "dev")).Should(Equal([]string{"dev1", "dev2"}))

		setClusterLabel(t, c, "dev2", "environment", "prod")
		setClusterLabel(t, c, "prod1", "environment", "dev")
		g.Eventually(decidedClusters(t.Context(), c, bound, "dev")).Should(Equal([]string{"dev1", "prod1"}))
		setClusterLabel(t, c, "dev2", "environment", "dev")
		setClusterLabel(t, c, "prod1", "environment", "prod")
		g.Eventually(decidedClusters(t.Context(), c, bound, "dev")).Should(Equal([]string{"dev1", "dev2"}))
	})

	t.Run("numberOfClusters", func(t *testing.T) {
		g := NewWithT(t)
		createPlacement(t, c, bound, "one-dev", ptr.To[int32](1))
		g.Eventually(decidedClusters(t.Context(), c, bound, "one-dev")).Should(SatisfyAny(
			Equal([]string{"dev1"}), Equal([]string{"dev2"})))
		p := &clusterv1beta1.Placement{}
		g.Eventually(func(g Gomega) {
			g.Expect(c.Get(t.Context(), client.ObjectKey{Namespace: bound, Name: "one-dev"}, p)).To(Succeed())
			g.Expect(p.Status.NumberOfSelectedClusters).To(BeEquivalentTo(1))
			g.Expect(meta.IsStatusConditionTrue(p.Status.Conditions, clusterv1beta1.PlacementConditionSatisfied)).To(BeTrue())
		}).Should(Succeed())
	})

	t.Run("no cluster set binding, no clusters", func(t *testing.T) {
		g := NewWithT(t)
		unbound := controlplane.Namespace(t, c)
		createPlacement(t, c, unbound, "dev", nil)
		p := &clusterv1beta1.Placement{}
		g.Eventually(func(g Gomega) {
			g.Expect(c.Get(t.Context(), client.ObjectKey{Namespace: unbound, Name: "dev"}, p)).To(Succeed())
			cond := meta.FindStatusCondition(p.Status.Conditions, clusterv1beta1.PlacementConditionSatisfied)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Reason).To(Equal("NoManagedClusterSetBindings"))
		}).Should(Succeed())
		g.Expect(decidedClusters(t.Context(), c, unbound, "dev")()).To(BeEmpty())
	})
}

func setClusterLabel(t *testing.T, c client.Client, cluster, key, value string) {
	t.Helper()
	mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}}
	patch := client.MergeFrom(mc.DeepCopy())
	mc.Labels = map[string]string{key: value}
	if err := c.Patch(t.Context(), mc, patch); err != nil {
		t.Fatalf("labelling managed cluster %s: %v", cluster, err)
	}
}

func bind(t *testing.T, c client.Client, namespace, clusterSet string) {
	t.Helper()
	b := &clusterv1beta2.ManagedClusterSetBinding{
		ObjectMeta: metav1.ObjectMeta{Name: clusterSet, Namespace: namespace},
		Spec:       clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: clusterSet},
	}
	if err := c.Create(t.Context(), b); err != nil {
		t.Fatalf("binding cluster set %s to %s: %v", clusterSet, namespace, err)
	}
}

// createPlacement creates a Placement of the default cluster set's clusters
// labelled environment=dev.
func createPlacement(t *testing.T, c client.Client, namespace, name string, n *int32) {
	t.Helper()
	p := &clusterv1beta1.Placement{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: clusterv1beta1.PlacementSpec{
			ClusterSets:      []string{ocmagents.DefaultClusterSet},
			NumberOfClusters: n,
			Predicates: []clusterv1beta1.ClusterPredicate{{RequiredClusterSelector: clusterv1beta1.ClusterSelector{
				LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"environment": "dev"}},
			}}},
		},
	}
	if err := c.Create(t.Context(), p); err != nil {
		t.Fatalf("creating placement %s/%s: %v", namespace, name, err)
	}
}

// decidedClusters returns the clusters of the PlacementDecisions of a
// Placement, sorted.
func decidedClusters(ctx context.Context, c client.Client, namespace, placement string) func() []string {
	return func() []string {
		pds := &clusterv1beta1.PlacementDecisionList{}
		if err := c.List(ctx, pds, client.InNamespace(namespace),
			client.MatchingLabels{clusterv1beta1.PlacementLabel: placement}); err != nil {
			return nil
		}
		var clusters []string
		for _, pd := range pds.Items {
			for _, d := range pd.Status.Decisions {
				clusters = append(clusters, d.ClusterName)
			}
		}
		slices.Sort(clusters)
		return clusters
	}
}
