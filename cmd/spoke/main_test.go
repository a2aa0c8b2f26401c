package main

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"

	"github.com/canopy-policy/canopy/internal/test/cmdtest"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/internal/test/testenv"
	"github.com/canopy-policy/canopy/pkg/spoke/lease"
)

// TestParseDenylist parses --template-function-denylist as OCM's agent
// does: comma-separated, repeatable.
func TestParseDenylist(t *testing.T) {
	g := NewWithT(t)
	opts, err := parseFlags([]string{"--hub-kubeconfig", "/h", "--cluster-name", "c1",
		"--template-function-denylist", "lookup, fromSecret", "--template-function-denylist=add"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(opts.denylist).To(Equal([]string{"lookup", "fromSecret", "add"}))
	g.Expect(opts.operatorPolicyHistory).To(Equal(uint(10)), "OCM's default")

	opts, err = parseFlags([]string{"--hub-kubeconfig", "/h", "--cluster-name", "c1", "--operator-policy-status-history-length", "3"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(opts.operatorPolicyHistory).To(Equal(uint(3)))
}

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr []string
	}{
		{name: "complete", args: []string{"--hub-kubeconfig", "/h", "--cluster-name", "cluster1"}},
		{name: "clock offset for a test", args: []string{"--hub-kubeconfig", "/h", "--cluster-name", "cluster1", "--test-clock-offset", "-5m"}},
		{name: "clock offset not a duration", args: []string{"--hub-kubeconfig", "/h", "--cluster-name", "cluster1", "--test-clock-offset", "5"},
			wantErr: []string{"test-clock-offset"}},
		{name: "missing hub kubeconfig and cluster", args: nil,
			wantErr: []string{"--hub-kubeconfig is required", `--cluster-name ""`}},
		{name: "cluster name not a DNS label", args: []string{"--hub-kubeconfig", "/h", "--cluster-name", "Cluster_1"},
			wantErr: []string{`--cluster-name "Cluster_1"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := parseFlags(tt.args)
			if len(tt.wantErr) == 0 {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			for _, want := range tt.wantErr {
				g.Expect(err).To(MatchError(ContainSubstring(want)))
			}
		})
	}
}

// TestRun starts the agent against a real managed API server and the real hub,
// using the cluster's restricted hub identity, and checks readiness and a
// clean shutdown.
func TestRun(t *testing.T) {
	g := NewWithT(t)
	env := testenv.ForTest(t, testenv.Options{ManagedClusters: []string{"cluster1"}, Dir: t.TempDir()})
	cluster := env.Managed[0]

	opts, err := parseFlags([]string{
		"--kubeconfig", cluster.KubeconfigPath,
		"--hub-kubeconfig", cluster.HubKubeconfigPath,
		"--cluster-name", cluster.Name,
		"--install-namespace", "default",
		"--metrics-bind-address", "0",
		"--health-probe-bind-address", cmdtest.FreeAddress(t),
	})
	g.Expect(err).NotTo(HaveOccurred())
	stop := cmdtest.RunUntilReady(t, opts.serving.HealthAddress, func(ctx context.Context) error { return run(ctx, opts) })
	expectConfigurationPoliciesEvaluated(t, cluster.Client, cluster.Name)
	expectLeases(t, env.Hub.Client, cluster)
	stop()
}

// expectLeases checks that the agent renews its Lease on the hub (in the
// cluster namespace) and on the managed cluster (in its install namespace,
// where OCM's klusterlet reads it).
func expectLeases(t *testing.T, hub client.Client, cluster *testenv.ManagedCluster) {
	g := NewWithT(t)
	for c, key := range map[client.Client]client.ObjectKey{
		hub:            {Namespace: cluster.Name, Name: lease.DefaultName},
		cluster.Client: {Namespace: "default", Name: lease.DefaultName},
	} {
		g.Eventually(func() error {
			return c.Get(t.Context(), key, &coordinationv1.Lease{})
		}, time.Minute, 200*time.Millisecond).Should(Succeed(), "lease %s", key)
	}
}

// expectConfigurationPoliciesEvaluated checks that the running agent
// evaluates a ConfigurationPolicy in the cluster namespace of the managed
// cluster (the only namespace, with OCM's open-cluster-management-policies,
// whose policies it evaluates).
func expectConfigurationPoliciesEvaluated(t *testing.T, c client.Client, clusterNamespace string) {
	g := NewWithT(t)
	ns := controlplane.Namespace(t, c)
	err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clusterNamespace}})
	g.Expect(client.IgnoreAlreadyExists(err)).To(Succeed())
	p := &policyv1.ConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: clusterNamespace, Name: "ns-exists"}}
	p.Spec.RemediationAction = policyv1.Inform
	p.Spec.ObjectTemplates = []policyv1.ObjectTemplate{{
		ComplianceType:   policyv1.MustHave,
		ObjectDefinition: runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + ns + `"}}`)},
	}}
	g.Expect(c.Create(t.Context(), p)).To(Succeed())
	g.Eventually(func(g Gomega) policyv1.ComplianceState {
		g.Expect(c.Get(t.Context(), client.ObjectKeyFromObject(p), p)).To(Succeed())
		return p.Status.ComplianceState
	}, time.Minute, 100*time.Millisecond).Should(Equal(policyv1.Compliant))
}
