package main

import (
	"bytes"
	"context"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/internal/test/testenv"
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

// TestKeepsWatching checks that the demo's table has a column for every
// cluster from the first print, and that a policy applied after everything
// settled still appears.
func TestKeepsWatching(t *testing.T) {
	g := NewWithT(t)
	env := testenv.ForTest(t, testenv.Options{ManagedClusters: []string{"c1", "c2"}})
	out := &syncBuffer{}
	d := &demo{opts: options{settle: time.Second}, dir: t.TempDir(), out: out, env: env}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- d.showCompliance(ctx) }()
	t.Cleanup(func() {
		cancel()
		g.Expect(<-done).To(Succeed(), "Ctrl-C ends the demo without an error")
	})

	g.Eventually(out.String, 10*time.Second).Should(ContainSubstring("Press Ctrl-C to stop."))
	g.Expect(out.String()).To(MatchRegexp(`POLICY\s+C1\s+C2\s+COMPLIANT`), "cluster columns from the first table")
	root := &policyv1.Policy{
		ObjectMeta: metav1.ObjectMeta{Namespace: controlplane.Namespace(t, env.Hub.Client), Name: "added-later"},
		Spec:       policyv1.PolicySpec{PolicyTemplates: []policyv1.PolicyTemplate{}},
	}
	g.Expect(env.Hub.Client.Create(t.Context(), root)).To(Succeed())
	g.Eventually(out.String, 10*time.Second).Should(ContainSubstring(root.Namespace + "/added-later"))
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
