package main

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/internal/test/testenv"
)

// testExclusions applies testdata/exclusions.yaml, a PolicySet that keeps
// its member legacy-tls off cluster2, reports both members Compliant where
// they are placed, and checks that status and explain show cluster2 as
// excluded, with the set's reason, not as a cluster the policy is not
// placed on.
func testExclusions(t *testing.T, env *testenv.Env) {
	g := NewWithT(t)
	objs, err := controlplane.ReadObjects("testdata/exclusions.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(controlplane.Apply(t.Context(), env.Hub.Client, objs...)).To(Succeed())
	g.Expect(env.SetPlacementDecisions(t.Context(), "edge", "everywhere", readClusters...)).To(Succeed())
	placed := map[string][]string{"legacy-tls": {"cluster1"}, "audit-log": readClusters}
	for policy, clusters := range placed {
		for _, c := range clusters {
			g.Eventually(func(g Gomega) {
				replica := &policyv1.Policy{}
				g.Expect(env.Hub.Client.Get(t.Context(), client.ObjectKey{Namespace: c, Name: "edge." + policy}, replica)).To(Succeed())
				replica.Status.ComplianceState = policyv1.Compliant
				g.Expect(env.Hub.Client.Status().Update(t.Context(), replica)).To(Succeed())
			}).WithTimeout(time.Minute).Should(Succeed())
		}
	}
	g.Eventually(func(g Gomega) {
		for policy, clusters := range placed {
			p := &policyv1.Policy{}
			g.Expect(env.Hub.Client.Get(t.Context(), client.ObjectKey{Namespace: "edge", Name: policy}, p)).To(Succeed())
			g.Expect(p.Status.Status).To(HaveLen(len(clusters)), policy)
			g.Expect(p.Status.ComplianceState).To(Equal(policyv1.Compliant), policy)
		}
		set := &policyv1beta1.PolicySet{}
		g.Expect(env.Hub.Client.Get(t.Context(), client.ObjectKey{Namespace: "edge", Name: "edge-baseline"}, set)).To(Succeed())
		g.Expect(set.Status.ComplianceState).To(Equal(policyv1.Compliant))
		g.Expect(set.Status.Exclusions).NotTo(BeEmpty())
	}).WithTimeout(time.Minute).Should(Succeed())

	for _, tt := range []struct {
		golden string
		args   []string
	}{
		{"status-exclusions", []string{"status", "-n", "edge"}},
		{"status-exclusions-json", []string{"status", "edge/legacy-tls", "-o", "json"}},
		{"explain-exclusions", []string{"explain", "edge/legacy-tls"}},
		{"explain-exclusions-cluster", []string{"explain", "edge/legacy-tls", "--cluster", "cluster2"}},
		{"explain-set-exclusions", []string{"explain", "edge/edge-baseline"}},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			out, err := runCLI(t, env, tt.args...)
			NewWithT(t).Expect(err).NotTo(HaveOccurred(), out)
			expectGolden(t, tt.golden, out)
		})
	}
}
