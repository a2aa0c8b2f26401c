package report

import (
	"bytes"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

func root(ns, name string, overall policyv1.ComplianceState, clusters ...string) policyv1.Policy {
	p := policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	p.Status.ComplianceState = overall
	for i := 0; i+1 < len(clusters); i += 2 {
		p.Status.Status = append(p.Status.Status, policyv1.CompliancePerClusterStatus{
			ClusterName: clusters[i], ClusterNamespace: clusters[i], ComplianceState: policyv1.ComplianceState(clusters[i+1]),
		})
	}
	return p
}

func TestBuildAndRender(t *testing.T) {
	g := NewWithT(t)
	replica := root("cluster1", "policies.b", "")
	replica.Labels = map[string]string{policyv1.RootPolicyLabel: "policies.b"}
	m := Build([]policyv1.Policy{
		root("policies", "b", policyv1.Pending, "cluster2", "Pending", "cluster1", "Compliant"),
		replica,
		root("policies", "a", policyv1.NonCompliant, "cluster1", "NonCompliant"),
		root("apps", "c", "", "cluster2", ""),
	})
	g.Expect(m.Clusters).To(Equal([]string{"cluster1", "cluster2"}))
	g.Expect(m.Rows).To(HaveLen(3), "the replica is not a row")
	g.Expect(m.Rows[2].Totals()).To(Equal(Totals{Compliant: 1, Pending: 1}))
	g.Expect(m.Settled()).To(BeFalse())

	var out bytes.Buffer
	g.Expect(Render(&out, m, RenderOptions{})).To(Succeed())
	g.Expect(out.String()).To(Equal(strings.Join([]string{
		"POLICY      CLUSTER1      CLUSTER2  COMPLIANT  NONCOMPLIANT  PENDING",
		"apps/c                    -         0          0             0",
		"policies/a  NonCompliant            0          1             0",
		"policies/b  Compliant     Pending   1          0             1",
		"",
	}, "\n")))
}

func TestRenderColourKeepsColumnsAligned(t *testing.T) {
	g := NewWithT(t)
	m := Build([]policyv1.Policy{
		root("p", "a", "", "c1", "Compliant", "c2", "NonCompliant"),
		root("p", "b", "", "c1", "", "c2", "Pending"),
	})
	var out bytes.Buffer
	g.Expect(Render(&out, m, RenderOptions{Colour: true})).To(Succeed())
	lines := strings.Split(out.String(), "\n")
	// With the escapes removed, the columns line up as without colour.
	var plain bytes.Buffer
	g.Expect(Render(&plain, m, RenderOptions{})).To(Succeed())
	g.Expect(stripANSI(lines[1])).To(HavePrefix(strings.Split(plain.String(), "\n")[1][:len("p/a  ")]))
	g.Expect(lines[1]).To(ContainSubstring(green + "Compliant" + reset))
	g.Expect(lines[2]).To(ContainSubstring(yellow + "Pending" + reset))
	g.Expect(stripANSI(lines[1])).To(HaveLen(len(stripANSI(lines[2]))), "data rows stay aligned:\n%s", out.String())
}

func TestSettled(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Build(nil).Settled()).To(BeFalse(), "nothing to show yet")
	g.Expect(Build([]policyv1.Policy{root("p", "a", policyv1.Compliant, "c1", "Compliant")}).Settled()).To(BeTrue())
	g.Expect(Build([]policyv1.Policy{root("p", "a", "", "c1", "")}).Settled()).To(BeFalse())
	g.Expect(Build([]policyv1.Policy{root("p", "a", "")}).Settled()).To(BeFalse(), "placed on no cluster yet")
}

func stripANSI(s string) string {
	for _, code := range []string{green, red, yellow, plain, reset} {
		s = strings.ReplaceAll(s, code, "")
	}
	return s
}
