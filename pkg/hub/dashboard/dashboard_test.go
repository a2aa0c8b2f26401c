package dashboard_test

import (
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/browser"
	"github.com/canopy-policy/canopy/internal/controlplane"
	"github.com/canopy-policy/canopy/pkg/hub/dashboard"
)

var update = flag.Bool("update", false, "save a screenshot of the dashboard to docs/dashboard.png")

var (
	installCertManager = fleetPolicy{name: "install-cert-manager", placement: "all", template: "cert-manager-operator"}
	issuer             = fleetPolicy{name: "cert-manager-issuer", placement: "all", template: "letsencrypt-issuer",
		dependsOn: installCertManager.name}
	hierarchy       = fleetPolicy{name: "namespace-hierarchy", placement: "all", template: "team-namespaces"}
	networkPolicies = fleetPolicy{name: "network-policies", placement: "prod", template: "default-deny"}
)

const pendingIssuer = "Dependencies were not satisfied: 1 is still pending (Policy policies.install-cert-manager); " +
	"Policy policies.install-cert-manager: want Compliant got NonCompliant"

// TestDashboard runs a hub with the dashboard, as the hub's own RBAC
// identity, over three clusters, and reads the dashboard through its API
// and in a real headless Chromium.
func TestDashboard(t *testing.T) {
	c, base := startHub(t)
	fleet{
		clusters:   []string{"prod-east", "prod-west", "staging"},
		placements: map[string][]string{"all": {"prod-east", "prod-west", "staging"}, "prod": {"prod-east", "prod-west"}},
		policies:   []fleetPolicy{installCertManager, issuer, hierarchy, networkPolicies},
	}.create(t, c)
	report(t, c, "prod-east", installCertManager, policyv1.Compliant, "subscription cert-manager was found")
	report(t, c, "prod-west", installCertManager, policyv1.NonCompliant, "subscription cert-manager not found in namespace operators")
	report(t, c, "staging", installCertManager, policyv1.Compliant, "subscription cert-manager was found")
	report(t, c, "prod-east", issuer, policyv1.Compliant, "clusterissuer letsencrypt was found")
	report(t, c, "prod-west", issuer, policyv1.Pending, pendingIssuer)
	report(t, c, "staging", issuer, policyv1.Compliant, "clusterissuer letsencrypt was found")
	report(t, c, "prod-east", hierarchy, policyv1.Compliant, "namespaces match the hierarchy")
	report(t, c, "prod-west", hierarchy, policyv1.Compliant, "namespaces match the hierarchy")
	report(t, c, "staging", hierarchy, policyv1.NonCompliant, "namespace team-a-dev: resourcequota compute not found <b>")
	report(t, c, "prod-east", networkPolicies, policyv1.Compliant, "networkpolicy default-deny was found")

	t.Run("api", func(t *testing.T) { testAPI(t, base) })
	t.Run("browser", func(t *testing.T) { testBrowser(t, c, base) })
}

func testAPI(t *testing.T, base string) {
	g := NewWithT(t)
	var m dashboard.MatrixView
	g.Eventually(func(g Gomega) {
		g.Expect(getJSON(base+"/api/matrix", &m)).To(Succeed())
		g.Expect(m.Totals.Compliant + m.Totals.NonCompliant + m.Totals.Pending).To(Equal(10))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(m.Clusters).To(Equal([]string{"prod-east", "prod-west", "staging"}))
	if *update { // for the README
		out, _ := json.MarshalIndent(m.Policies[3], "", "  ")
		t.Logf("GET /api/matrix .policies[3]:\n%s", out)
	}
	g.Expect(m.Policies).To(HaveLen(4))
	g.Expect(m.Policies[3].Name).To(Equal("network-policies"))
	g.Expect(m.Policies[3].Cells[2]).To(Equal(dashboard.Cell{Cluster: "staging"}), "not placed on staging")

	var p dashboard.PolicyView
	g.Expect(getJSON(base+"/api/policies/policies/cert-manager-issuer", &p)).To(Succeed())
	g.Expect(p.Dependencies).To(ConsistOf(dashboard.DependencyView{Kind: "Policy", Namespace: policyNS,
		Name: installCertManager.name, Compliance: policyv1.Compliant, State: policyv1.NonCompliant}))
	g.Expect(p.Explanation.Clusters).To(HaveLen(3))
	g.Expect(p.Explanation.Clusters[1].Templates[0].Message).To(Equal(pendingIssuer), "history read past the trimmed cache")

	resp, err := http.Get(base + "/") //nolint:noctx // a test's loopback URL
	g.Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	g.Expect(resp.Header.Get("Content-Security-Policy")).To(ContainSubstring("default-src 'self'"))
	g.Expect(resp.Header.Get("Content-Security-Policy")).To(ContainSubstring("script-src 'self';"))
	g.Expect(resp.Header.Get("X-Content-Type-Options")).To(Equal("nosniff"))

	resp, err = http.Post(base+"/api/matrix", "application/json", strings.NewReader("{}")) //nolint:noctx // as above
	g.Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusMethodNotAllowed), "read-only")
	g.Expect(get(base + "/api/policies/policies/missing")).To(MatchError(ContainSubstring("404")))

	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/api/matrix", nil)
	g.Expect(err).NotTo(HaveOccurred())
	req.Host = "rebound.example.com:8090"
	resp, err = http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusForbidden), "DNS rebinding guard")
	g.Expect(get(base + "/policies/policies/missing")).To(MatchError(ContainSubstring("404")))
}

func getJSON(url string, into any) error {
	resp, err := http.Get(url) //nolint:gosec,noctx // a test's loopback URL
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := get(url); err != nil {
		return err
	}
	return json.NewDecoder(resp.Body).Decode(into)
}

// renderedMatrix returns the text the browser shows in the matrix, by
// policy: each cluster's cell and the totals.
const renderedMatrix = `(function () {
var out = {};
document.querySelectorAll('#matrix tbody tr').forEach(function (tr) {
  var row = {};
  tr.querySelectorAll('td.cell').forEach(function (td) { row[td.dataset.cluster] = td.innerText; });
  row.totals = Array.from(tr.querySelectorAll('td.total')).map(function (td) { return td.innerText; }).join(' ');
  out[tr.dataset.policy] = row;
});
return out;
})()`

func testBrowser(t *testing.T, c client.Client, base string) {
	g := NewWithT(t)
	b := browser.Start(t, chromedp.WindowSize(1280, 860))
	g.Expect(b.Navigate(base + "/")).To(Succeed())
	matrix := func() (map[string]map[string]string, error) {
		var m map[string]map[string]string
		err := b.Eval(renderedMatrix, &m)
		return m, err
	}
	row := func(east, west, staging, totals string) map[string]string {
		return map[string]string{"prod-east": east, "prod-west": west, "staging": staging, "totals": totals}
	}
	g.Eventually(matrix).WithTimeout(30 * time.Second).Should(Equal(map[string]map[string]string{
		"policies/cert-manager-issuer":  row("Compliant", "Pending", "Compliant", "2 0 1"),
		"policies/install-cert-manager": row("Compliant", "NonCompliant", "Compliant", "2 1 0"),
		"policies/namespace-hierarchy":  row("Compliant", "Compliant", "NonCompliant", "2 1 0"),
		"policies/network-policies":     row("Compliant", "-", "", "1 0 0"),
	}))
	g.Expect(b.Text("#matrix tfoot")).To(Equal("Total 7 2 1"))
	g.Expect(b.Text("#updated")).To(HavePrefix("Last updated"))
	g.Expect(b.Nodes("svg#graph g.node")).To(HaveLen(2), "the two policies that depend")
	if *update {
		saveScreenshot(t, b)
	}

	// One replica changes on the hub: the open page follows, without a reload.
	g.Expect(b.Eval("window.canopyMarker = 42", nil)).To(Succeed())
	report(t, c, "prod-west", installCertManager, policyv1.Compliant, "subscription cert-manager was found")
	g.Eventually(matrix).WithTimeout(30 * time.Second).Should(HaveKeyWithValue("policies/install-cert-manager",
		row("Compliant", "Compliant", "Compliant", "3 0 0")))
	g.Expect(b.Text("#matrix tfoot")).To(Equal("Total 8 1 1"))
	var marker int
	g.Expect(b.Eval("window.canopyMarker", &marker)).To(Succeed())
	g.Expect(marker).To(Equal(42), "the page updated in place")

	testPolicyPage(t, c, b, base)
}

// testPolicyPage opens the Pending policy's page: the reason it waits and
// the dependency graph are shown.
func testPolicyPage(t *testing.T, c client.Client, b *browser.Browser, base string) {
	g := NewWithT(t)
	g.Expect(b.Navigate(base + "/policies/policies/cert-manager-issuer")).To(Succeed())
	g.Eventually(func() (string, error) {
		return b.Text(`#clusters article[data-cluster="prod-west"] .unmet`)
	}).WithTimeout(30 * time.Second).Should(Equal(
		"Waiting for Policy policies/install-cert-manager: want Compliant got NonCompliant"))
	g.Expect(b.Text(`#clusters article[data-cluster="prod-west"] h3`)).To(Equal("prod-west Pending"))
	g.Expect(b.Text(`#dependencies tbody tr`)).To(ContainSubstring("policies/install-cert-manager"))
	var graph []string
	g.Expect(b.Eval(`Array.from(document.querySelectorAll('svg#graph g.node')).map(
		function (n) { return n.dataset.node + ' ' + Array.from(n.classList).sort().join(' '); })`, &graph)).To(Succeed())
	g.Expect(graph).To(ConsistOf(
		"Policy/policies/cert-manager-issuer focus node state-pending",
		"Policy/policies/cert-manager-issuer/ConfigurationPolicy/letsencrypt-issuer node state-pending template",
		"Policy/policies/install-cert-manager node state-compliant",
		"Policy/policies/install-cert-manager/ConfigurationPolicy/cert-manager-operator node state-unknown template",
	), "the replicas read for the page give the policy's templates their states")
	g.Expect(b.Nodes("svg#graph g.edge.met path")).To(HaveLen(1), "the dependency is met now")
	g.Expect(b.Nodes("svg#graph g.edge.structural path")).To(HaveLen(2), "each policy to its template")

	// The dependency breaks again: the open page follows.
	g.Expect(b.Text("#dependencies td[data-dependency]")).To(Equal("Compliant"))
	report(t, c, "prod-west", installCertManager, policyv1.NonCompliant, "subscription cert-manager not found in namespace operators")
	g.Eventually(func() (string, error) {
		return b.Text("#dependencies td[data-dependency]")
	}).WithTimeout(30 * time.Second).Should(Equal("NonCompliant"))
	var class string
	g.Expect(b.Eval(`document.querySelector(
		'svg#graph g.node[data-node="Policy/policies/install-cert-manager"]').getAttribute('class')`, &class)).To(Succeed())
	g.Expect(class).To(ContainSubstring("state-noncompliant"), "the graph is repainted")

}

func saveScreenshot(t *testing.T, b *browser.Browser) {
	g := NewWithT(t)
	png, err := b.Screenshot()
	g.Expect(err).NotTo(HaveOccurred())
	root, err := controlplane.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(filepath.Join(root, "docs", "dashboard.png"), png, 0o600)).To(Succeed())
}
