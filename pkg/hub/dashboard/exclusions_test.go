package dashboard_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/internal/test/browser"
	"github.com/canopy-policy/canopy/pkg/hub/dashboard"
	policyreport "github.com/canopy-policy/canopy/pkg/report"
)

// The exclusions test's policies, placed on edgeClusters through the set
// edgeSet, which keeps legacyTLS off edge-2.
var (
	legacyTLS    = fleetPolicy{name: "edge-legacy-tls", template: "legacy-tls"}
	auditLog     = fleetPolicy{name: "edge-audit-log", template: "audit-log"}
	edgeClusters = []string{"edge-1", "edge-2"}
)

const (
	edgeSet       = "edge-baseline"
	edgeExclusion = "edge-2 terminates TLS 1.3 only"
)

// createEdge writes the exclusions test's objects on the hub, in the
// namespace of the other tests' policies (report writes replicas of
// policies of that namespace), beside whatever they left there.
func createEdge(t *testing.T, c client.Client) {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	for _, ns := range append([]string{policyNS}, edgeClusters...) {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); !apierrors.IsAlreadyExists(err) {
			g.Expect(err).NotTo(HaveOccurred())
		}
	}
	g.Expect(c.Create(ctx, &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Name: "edge", Namespace: policyNS}})).To(Succeed())
	pd := &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Name: "edge-1", Namespace: policyNS,
		Labels: map[string]string{clusterv1beta1.PlacementLabel: "edge"}}}
	g.Expect(c.Create(ctx, pd)).To(Succeed())
	for _, cl := range edgeClusters {
		pd.Status.Decisions = append(pd.Status.Decisions, clusterv1beta1.ClusterDecision{ClusterName: cl})
	}
	g.Expect(c.Status().Update(ctx, pd)).To(Succeed())
	set := &policyv1beta1.PolicySet{ObjectMeta: metav1.ObjectMeta{Name: edgeSet, Namespace: policyNS},
		Spec: policyv1beta1.PolicySetSpec{
			Policies: []policyv1.NonEmptyString{policyv1.NonEmptyString(legacyTLS.name), policyv1.NonEmptyString(auditLog.name)},
			Exclusions: []policyv1beta1.PolicySetExclusion{{PolicyName: policyv1.NonEmptyString(legacyTLS.name),
				Reason: edgeExclusion, ClusterNames: []policyv1.NonEmptyString{"edge-2"}}},
		}}
	g.Expect(c.Create(ctx, legacyTLS.object())).To(Succeed())
	g.Expect(c.Create(ctx, auditLog.object())).To(Succeed())
	// Note: the admission policy may need a moment after the suite starts.
	g.Eventually(func() error { return c.Create(ctx, set.DeepCopy()) }).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(c.Create(ctx, &policyv1.PlacementBinding{
		ObjectMeta:   metav1.ObjectMeta{Name: edgeSet, Namespace: policyNS},
		PlacementRef: policyv1.PlacementSubject{APIGroup: clusterv1beta1.GroupName, Kind: "Placement", Name: "edge"},
		Subjects:     []policyv1.Subject{{APIGroup: policyv1.GroupName, Kind: policyv1beta1.PolicySetKind, Name: edgeSet}},
	})).To(Succeed())
}

// TestPolicySetExclusions checks that the dashboard shows a cluster a
// PolicySet's exclusion keeps a member off as excluded, with the set's
// reason, on the overview, the set's page and the policy's page, through
// its API and in a real headless Chromium.
func TestPolicySetExclusions(t *testing.T) {
	c, base := startHub(t)
	createEdge(t, c)
	report(t, c, "edge-1", legacyTLS, policyv1.Compliant, "configmap tls was found")
	for _, cl := range edgeClusters {
		report(t, c, cl, auditLog, policyv1.Compliant, "configmap audit was found")
	}
	g := NewWithT(t)
	excluded := dashboard.Cell{Cluster: "edge-2", Excluded: true,
		Reason: legacyTLS.name + " excluded from edge-2 by PolicySet " + edgeSet + ": " + edgeExclusion}
	var set dashboard.SetView
	g.Eventually(func(g Gomega) {
		g.Expect(getJSON(base+"/api/policysets/"+policyNS+"/"+edgeSet, &set)).To(Succeed())
		g.Expect(set.Compliant).To(Equal(policyv1.Compliant))
		g.Expect(set.Members).To(HaveLen(2))
		g.Expect(set.Members[0].Cells).To(ContainElement(excluded))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(set.Clusters).To(Equal(edgeClusters))
	g.Expect(set.Exclusions).To(Equal([]policyreport.Exclusion{
		{Policy: legacyTLS.name, Cluster: "edge-2", PolicySet: edgeSet, Reason: edgeExclusion}}))
	g.Expect(set.StatusMessage).To(ContainSubstring("One or more policies were excluded. For details, see status.exclusions."))
	g.Expect(set.HeldBack).To(BeEmpty(), "an excluded cluster holds nothing back")

	var m dashboard.MatrixView
	g.Expect(getJSON(base+"/api/matrix", &m)).To(Succeed())
	g.Expect(m.Policies).To(ContainElement(And(HaveField("Name", legacyTLS.name), HaveField("Cells", ContainElement(excluded)))))

	b := browser.Start(t, chromedp.WindowSize(1280, 860))
	g.Expect(b.Navigate(base + "/policysets/" + policyNS + "/" + edgeSet)).To(Succeed())
	g.Eventually(func() (string, error) {
		return b.Text(`#members tbody tr[data-policy="policies/` + legacyTLS.name + `"] td.cell.excluded[data-cluster="edge-2"] .state`)
	}).WithTimeout(30 * time.Second).Should(Equal("excluded"))
	g.Expect(b.Text(`#exclusions li[data-policy="` + legacyTLS.name + `"]`)).
		To(Equal(legacyTLS.name + " excluded from edge-2: " + edgeExclusion))
	g.Expect(b.Navigate(base + "/policies/" + policyNS + "/" + legacyTLS.name)).To(Succeed())
	g.Eventually(func() (string, error) {
		return b.Text(`#clusters article.excluded[data-cluster="edge-2"]`)
	}).WithTimeout(30 * time.Second).Should(ContainSubstring("PolicySet " + edgeSet + " does not propagate the policy to this cluster: " + edgeExclusion))
}
