package main

import (
	"io"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestExamplesArePlaced checks that the demo's clusters, labelled as the
// demo labels them, are chosen by OCM's placement controller for the
// Placements of the demo's examples and of examples/propagation.
func TestExamplesArePlaced(t *testing.T) {
	g := NewWithT(t)
	examples := []string{"../../examples/propagation"}
	for _, e := range defaultExamples {
		examples = append(examples, "../../"+e)
	}
	d := &demo{
		opts: options{clusters: []string{"c1", "c2"}, examples: examples},
		dir:  t.TempDir(),
		out:  io.Discard,
	}
	t.Cleanup(d.stop)
	g.Expect(d.startClusters(t.Context())).To(Succeed())
	g.Expect(d.applyExamples(t.Context())).To(Succeed())

	decided := func(placement string) func() []string {
		return func() []string {
			pds := &clusterv1beta1.PlacementDecisionList{}
			if err := d.env.Hub.Client.List(t.Context(), pds, client.InNamespace("policies"),
				client.MatchingLabels{clusterv1beta1.PlacementLabel: placement}); err != nil {
				return nil
			}
			var clusters []string
			for _, pd := range pds.Items {
				for _, dec := range pd.Status.Decisions {
					clusters = append(clusters, dec.ClusterName)
				}
			}
			slices.Sort(clusters)
			return clusters
		}
	}
	g.Eventually(decided("dev-clusters"), 30*time.Second).Should(Equal([]string{"c1", "c2"}))
	g.Eventually(decided("canary-clusters"), 30*time.Second).Should(Equal([]string{"c2"}))
	g.Eventually(decided("all-clusters"), 30*time.Second).Should(Equal([]string{"c1", "c2"}))
	g.Eventually(decided("ordered-install"), 30*time.Second).Should(Equal([]string{"c1", "c2"}))
}
