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
	"github.com/canopy-policy/canopy/internal/test/browser"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/pkg/hub/dashboard"
)

var update = flag.Bool("update", false, "save a screenshot of the dashboard to docs/dashboard.png")

var (
	installCertManager = fleetPolicy{name: "install-cert-manager", placement: "all", template: "cert-manager-operator"}
	issuer             = fleetPolicy{name: "cert-manager-issuer", placement: "all", template: "letsencrypt-issuer",
		dependsOn: installCertManager.name}
	hierarchy       = fleetPolicy{name: "namespace-hierarchy", placement: "all", template: "team-namespaces"}
	networkPolicies = fleetPolicy{name: "network-policies", placement: "prod", template: "default-deny", progressive: true}
	// orderedInstall is examples/ordered-install: each template waits for
	// the one before.
	orderedInstall = fleetPolicy{name: "ordered-install", placement: "all",
		chain: []string{"widget-crd", "widget-instance", "widget-check"}}
	needsMissing = fleetPolicy{name: "needs-missing", placement: "prod", template: "needs-missing-t", dependsOn: "not-there"}
)

// certManagerSet groups the cert-manager policies, the install first.
const certManagerSet = "cert-manager"

const (
	pendingIssuer = "Dependencies were not satisfied: 1 is still pending (Policy policies.install-cert-manager); " +
		"Policy policies.install-cert-manager: want Compliant got NonCompliant"
	pendingMissing = "Dependencies were not satisfied: 1 is still pending (Policy policies.not-there); " +
		"Policy policies.not-there: not found"
)

// TestDashboard runs a hub with the dashboard, as the hub's own RBAC
// identity, over three clusters, and reads the dashboard through its API
// and in a real headless Chromium.
func TestDashboard(t *testing.T) {
	c, base := startHub(t)
	fleet{
		clusters:   []string{"prod-east", "prod-west", "staging"},
		placements: map[string][]string{"all": {"prod-east", "prod-west", "staging"}, "prod": {"prod-east", "prod-west"}},
		policies:   []fleetPolicy{installCertManager, issuer, hierarchy, networkPolicies, orderedInstall, needsMissing},
		sets:       map[string][]string{certManagerSet: {installCertManager.name, issuer.name}},
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
	for _, cluster := range []string{"prod-east", "prod-west", "staging"} {
		report(t, c, cluster, orderedInstall, policyv1.Compliant, "widgets are installed")
	}
	report(t, c, "prod-east", needsMissing, policyv1.Pending, pendingMissing)
	report(t, c, "prod-west", needsMissing, policyv1.Pending, pendingMissing)

	t.Run("api", func(t *testing.T) { testAPI(t, base) })
	t.Run("browser", func(t *testing.T) { testBrowser(t, c, base) })
}

func testAPI(t *testing.T, base string) {
	g := NewWithT(t)
	var m dashboard.MatrixView
	g.Eventually(func(g Gomega) {
		g.Expect(getJSON(base+"/api/matrix", &m)).To(Succeed())
		g.Expect(m.Totals.Compliant + m.Totals.NonCompliant + m.Totals.Pending).To(Equal(15))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(m.Clusters).To(Equal([]string{"prod-east", "prod-west", "staging"}))
	rows := map[string]dashboard.PolicyRow{}
	for _, r := range m.Policies {
		rows[r.Name] = r
	}
	if *update { // for the README
		out, _ := json.MarshalIndent(rows[issuer.name], "", "  ")
		t.Logf("GET /api/matrix .policies[0]:\n%s", out)
	}
	g.Expect(m.Policies).To(HaveLen(6))
	g.Expect(rows[networkPolicies.name].Cells[2]).To(Equal(dashboard.Cell{Cluster: "staging"}), "not placed on staging")
	g.Expect(rows[issuer.name].Cells[1].Reason).To(HaveSuffix("want Compliant got NonCompliant"), "the first reason of a Pending cell")
	g.Expect(rows[needsMissing.name].Cells[0].Reason).To(HaveSuffix("Policy policies/not-there: not found"))
	g.Expect(rows[hierarchy.name].Cells[2].Reason).To(ContainSubstring("resourcequota compute not found"), "and of a NonCompliant one")
	g.Expect(rows[hierarchy.name].Cells[0].Reason).To(BeEmpty(), "a Compliant cell needs no reason")
	g.Expect(m.Sets).To(ConsistOf(HaveField("Name", certManagerSet)))
	g.Expect(m.Sets[0].Members).To(Equal([]string{installCertManager.name, issuer.name}))
	testDetailAPIs(t, base)
	testServing(t, base)
	captureJSON(t, base+"/api/matrix", "matrix")
	captureJSON(t, base+"/api/policysets/policies/cert-manager", "set")
	captureJSON(t, base+"/api/policies/policies/needs-missing", "needs-missing")
	captureJSON(t, base+"/api/policies/policies/network-policies", "network-policies")
}

// testDetailAPIs reads a policy's and a set's JSON.
func testDetailAPIs(t *testing.T, base string) {
	g := NewWithT(t)
	var p dashboard.PolicyView
	g.Expect(getJSON(base+"/api/policies/policies/cert-manager-issuer", &p)).To(Succeed())
	g.Expect(p.Dependencies).To(ConsistOf(dashboard.DependencyView{Kind: "Policy", Namespace: policyNS,
		Name: installCertManager.name, Compliance: policyv1.Compliant, State: policyv1.NonCompliant,
		Reason: "want Compliant got NonCompliant"}))
	g.Expect(p.Explanation.Clusters).To(HaveLen(3))
	g.Expect(p.Explanation.Clusters[1].Templates[0].Message).To(Equal(pendingIssuer), "history read past the trimmed cache")
	g.Expect(p.Sets).To(ConsistOf(HaveField("Name", certManagerSet)))
	g.Eventually(func(g Gomega) {
		g.Expect(getJSON(base+"/api/policies/policies/network-policies", &p)).To(Succeed())
		g.Expect(p.Rollout).NotTo(BeNil(), "the hub's status.rollout")
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(getJSON(base+"/api/policies/policies/needs-missing", &p)).To(Succeed())
	g.Expect(p.Dependencies).To(ConsistOf(HaveField("Reason", "not found")), "as the policy's cluster cards say")

	var set dashboard.SetView
	g.Eventually(func(g Gomega) {
		g.Expect(getJSON(base+"/api/policysets/policies/"+certManagerSet, &set)).To(Succeed())
		g.Expect(set.Compliant).To(Equal(policyv1.NonCompliant))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(set.Members).To(HaveLen(2))
	g.Expect(set.HeldBack).To(ConsistOf(HaveField("Cluster", "prod-west")))
	g.Expect(set.HeldBack[0].Member).To(Equal(installCertManager.name), "the first member not Compliant there")
	g.Expect(get(base + "/api/policysets/policies/missing")).To(MatchError(ContainSubstring("404")))
	g.Expect(get(base + "/policysets/policies/missing")).To(MatchError(ContainSubstring("404")))
}

// testServing checks the headers, the methods and the hosts served.
func testServing(t *testing.T, base string) {
	g := NewWithT(t)
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
// policy: each cluster's cell (its state, without the reason for screen
// readers) and the totals.
const renderedMatrix = `(function () {
var out = {};
document.querySelectorAll('#matrix tbody tr').forEach(function (tr) {
  var row = {};
  tr.querySelectorAll('td.cell').forEach(function (td) { row[td.dataset.cluster] = (td.querySelector('.state') || td).innerText; });
  row.totals = Array.from(tr.querySelectorAll('td.total')).map(function (td) { return td.innerText; }).join(' ');
  out[tr.dataset.policy] = row;
});
return out;
})()`

// drawnNode is a box of the graph as the browser draws it.
type drawnNode struct {
	ID, State, Text string
	// TextWidth is the label's rendered width, BoxWidth its box's.
	TextWidth, BoxWidth float64
}

// drawnEdge is an edge of the graph as the browser draws it; Class is
// met, unmet or structural.
type drawnEdge struct {
	From, To, Class string
}

const renderedGraph = `(function () {
var nodes = Array.from(document.querySelectorAll('svg#graph g.node')).map(function (n) {
  var t = n.querySelector('text'), r = n.querySelector('rect');
  return {ID: n.dataset.node, State: Array.from(n.classList).filter(function (c) { return c.indexOf('state-') === 0; })[0],
    Text: t.textContent, TextWidth: t.getComputedTextLength(), BoxWidth: r.width.baseVal.value};
});
var edges = Array.from(document.querySelectorAll('svg#graph g.edge')).map(function (e) {
  return {From: e.dataset.from, To: e.dataset.to,
    Class: ['met', 'unmet', 'structural'].filter(function (c) { return e.classList.contains(c); }).join(' ')};
});
return {nodes: nodes, edges: edges};
})()`

// drawnGraph returns the graph the browser shows.
func drawnGraph(b *browser.Browser) (nodes []drawnNode, edges []drawnEdge, err error) {
	var out struct {
		Nodes []drawnNode `json:"nodes"`
		Edges []drawnEdge `json:"edges"`
	}
	err = b.Eval(renderedGraph, &out)
	return out.Nodes, out.Edges, err
}

// expectGraphAsAPI checks the drawn graph against the API's: each node in
// its state class, each edge met or unmet as the API says, and each label
// whole within its box.
func expectGraphAsAPI(g Gomega, b *browser.Browser, api dashboard.GraphState) {
	nodes, edges, err := drawnGraph(b)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(nodes).To(HaveLen(len(api.Nodes)))
	want := map[string]dashboard.NodeState{}
	for _, n := range api.Nodes {
		want[n.ID] = n
	}
	for _, n := range nodes {
		g.Expect(want).To(HaveKey(n.ID))
		g.Expect(n.State).To(Equal(stateClass(want[n.ID].Compliant)), "node %s", n.ID)
		g.Expect(n.Text).To(Equal(want[n.ID].Label), "the whole label")
		g.Expect(n.TextWidth).To(BeNumerically("<", n.BoxWidth-4), "%s: the label fits its box", n.ID)
	}
	wantEdge := map[string]string{}
	for _, e := range api.Edges {
		class := map[bool]string{true: "met", false: "unmet"}[e.Met]
		if e.Structural {
			class = "structural"
		}
		wantEdge[e.From+" "+e.To] = class
	}
	g.Expect(edges).To(HaveLen(len(api.Edges)))
	for _, e := range edges {
		g.Expect(e.Class).To(Equal(wantEdge[e.From+" "+e.To]), "edge %s -> %s", e.From, e.To)
	}
}

func stateClass(s policyv1.ComplianceState) string {
	if s == "" {
		return "state-unknown"
	}
	return "state-" + strings.ToLower(string(s))
}

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
		"policies/needs-missing":        row("Pending", "Pending", "", "0 0 2"),
		"policies/network-policies":     row("Compliant", "-", "", "1 0 0"),
		"policies/ordered-install":      row("Compliant", "Compliant", "Compliant", "3 0 0"),
	}))
	g.Expect(b.Text("#matrix tfoot")).To(Equal("Total 10 2 3"))
	g.Expect(b.Text("#summary")).To(ContainSubstring("non-compliant cells"), "the tiles count cells, and say so")
	g.Expect(b.Text("#updated")).To(HavePrefix("Last updated"))
	testOverviewGraph(t, b, base)
	testHoverReason(t, b, base)
	screenshot(t, b, "overview")
	if *update {
		saveScreenshot(t, b)
	}

	// One replica changes on the hub: the open page follows, without a reload.
	g.Expect(b.Eval("window.canopyMarker = 42", nil)).To(Succeed())
	report(t, c, "prod-west", installCertManager, policyv1.Compliant, "subscription cert-manager was found")
	g.Eventually(matrix).WithTimeout(30 * time.Second).Should(HaveKeyWithValue("policies/install-cert-manager",
		row("Compliant", "Compliant", "Compliant", "3 0 0")))
	g.Expect(b.Text("#matrix tfoot")).To(Equal("Total 11 1 3"))
	var marker int
	g.Expect(b.Eval("window.canopyMarker", &marker)).To(Succeed())
	g.Expect(marker).To(Equal(42), "the page updated in place")

	testPolicyPage(t, c, b, base)
	testSetPage(t, b, base)
	testRollout(t, b, base)
}

// testRollout opens the page of the policy with a rollout strategy: its
// status.rollout is shown by decision group.
func testRollout(t *testing.T, b *browser.Browser, base string) {
	g := NewWithT(t)
	g.Expect(b.Navigate(base + "/policies/policies/" + networkPolicies.name)).To(Succeed())
	g.Eventually(func() (string, error) {
		return b.Text("#rollout .rollout-phase")
	}).WithTimeout(30 * time.Second).Should(MatchRegexp(`^Progressive: (Progressing|Succeeded)`))
	g.Expect(b.Text("#rollout table.rollout tbody tr td")).To(Equal("prod"), "the group's placement")
	g.Expect(b.Text("#rollout table.rollout tbody tr")).To(ContainSubstring("prod-east"))
	screenshot(t, b, "rollout")
}

// testOverviewGraph checks the overview's graph against the API: the
// ordered-install policy, Compliant on every cluster, is drawn Compliant
// with its templates, and the dependencies between them met.
func testOverviewGraph(t *testing.T, b *browser.Browser, base string) {
	g := NewWithT(t)
	var m dashboard.MatrixView
	g.Expect(getJSON(base+"/api/matrix", &m)).To(Succeed())
	expectGraphAsAPI(g, b, m.Graph)
	nodes, edges, err := drawnGraph(b)
	g.Expect(err).NotTo(HaveOccurred())
	ordered := "Policy/policies/ordered-install"
	var states []string
	for _, n := range nodes {
		if strings.HasPrefix(n.ID, ordered) {
			states = append(states, n.ID+" "+n.State)
		}
	}
	g.Expect(states).To(ConsistOf(ordered+" state-compliant",
		ordered+"/ConfigurationPolicy/widget-crd state-compliant",
		ordered+"/ConfigurationPolicy/widget-instance state-compliant",
		ordered+"/ConfigurationPolicy/widget-check state-compliant"))
	g.Expect(edges).To(ContainElements(
		drawnEdge{From: ordered + "/ConfigurationPolicy/widget-instance", To: ordered + "/ConfigurationPolicy/widget-crd", Class: "met"},
		drawnEdge{From: ordered + "/ConfigurationPolicy/widget-check", To: ordered + "/ConfigurationPolicy/widget-instance", Class: "met"},
	))
	byID := map[string]drawnNode{}
	for _, n := range nodes {
		byID[n.ID] = n
	}
	for _, r := range m.Policies {
		if n, ok := byID["Policy/"+r.Namespace+"/"+r.Name]; ok {
			g.Expect(n.State).To(Equal(stateClass(r.Compliant)), "%s as in the matrix", n.ID)
		}
	}
	g.Expect(b.Nodes(`#sets a[href="/policysets/policies/cert-manager"]`)).To(HaveLen(1), "the overview links the set")
	g.Expect(b.Nodes(`svg#graph g.node[data-node="PolicySet/policies/cert-manager"] a[href="/policysets/policies/cert-manager"]`)).
		To(HaveLen(1), "and so does its box")
}

// testHoverReason checks that a Pending cell gives its first reason on
// hover (title) and to screen readers (visually hidden text), and a
// Compliant one none.
func testHoverReason(t *testing.T, b *browser.Browser, base string) {
	g := NewWithT(t)
	var m dashboard.MatrixView
	g.Expect(getJSON(base+"/api/matrix", &m)).To(Succeed())
	var reason string
	for _, r := range m.Policies {
		if r.Name == issuer.name {
			reason = r.Cells[1].Reason
		}
	}
	g.Expect(reason).To(HaveSuffix("want Compliant got NonCompliant"))
	cell := `#matrix tr[data-policy="policies/cert-manager-issuer"] td[data-cluster="prod-west"]`
	var title, hidden, label string
	g.Expect(b.Eval(`document.querySelector('`+cell+`').title`, &title)).To(Succeed())
	g.Expect(title).To(Equal(reason))
	g.Expect(b.Eval(`document.querySelector('`+cell+` .reason').textContent`, &hidden)).To(Succeed())
	g.Expect(hidden).To(Equal(": " + reason))
	g.Expect(b.Eval(`getComputedStyle(document.querySelector('`+cell+` .reason')).clipPath + ' ' + `+
		`getComputedStyle(document.querySelector('`+cell+` .reason')).position`, &label)).To(Succeed())
	g.Expect(label).To(HaveSuffix("absolute"), "visually hidden, not display:none, so screen readers read it")
	g.Expect(b.Nodes(`#matrix tr[data-policy="policies/cert-manager-issuer"] td[data-cluster="prod-east"][title]`)).
		To(BeEmpty(), "a Compliant cell has no reason")
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
	g.Expect(b.Nodes(`#member-of a[href="/policysets/policies/cert-manager"]`)).To(HaveLen(1), "the page links its set")
	var p dashboard.PolicyView
	g.Expect(getJSON(base+"/api/policies/policies/cert-manager-issuer", &p)).To(Succeed())
	expectGraphAsAPI(g, b, p.Graph)
	var graph []string
	g.Expect(b.Eval(`Array.from(document.querySelectorAll('svg#graph g.node')).map(
		function (n) { return n.dataset.node + ' ' + Array.from(n.classList).sort().join(' '); })`, &graph)).To(Succeed())
	g.Expect(graph).To(ConsistOf(
		"Policy/policies/cert-manager-issuer focus node state-pending",
		"Policy/policies/cert-manager-issuer/ConfigurationPolicy/letsencrypt-issuer node state-pending template",
		"Policy/policies/install-cert-manager node state-compliant",
		"Policy/policies/install-cert-manager/ConfigurationPolicy/cert-manager-operator node state-compliant template",
		"PolicySet/policies/cert-manager node state-pending",
	), "every replica read for the page gives the templates their states")
	g.Expect(b.Nodes("svg#graph g.edge.met path")).To(HaveLen(1), "the dependency is met now")
	g.Expect(b.Nodes("svg#graph g.edge.structural path")).To(HaveLen(4), "each policy to its template, the set to its members")

	// The dependency breaks again: the open page follows.
	g.Expect(b.Text("#dependencies td[data-dependency]")).To(Equal("Compliant"))
	report(t, c, "prod-west", installCertManager, policyv1.NonCompliant, "subscription cert-manager not found in namespace operators")
	g.Eventually(func() (string, error) {
		return b.Text("#dependencies td[data-dependency] .badge")
	}).WithTimeout(30 * time.Second).Should(Equal("NonCompliant"))
	g.Expect(b.Text("#dependencies td[data-dependency] .reason")).To(Equal("want Compliant got NonCompliant"))
	var class string
	g.Expect(b.Eval(`document.querySelector(
		'svg#graph g.node[data-node="Policy/policies/install-cert-manager"]').getAttribute('class')`, &class)).To(Succeed())
	g.Expect(class).To(ContainSubstring("state-noncompliant"), "the graph is repainted")
	g.Expect(b.Nodes("svg#graph g.edge.unmet path")).To(HaveLen(1), "and its edge")
	testMissingDependency(t, b, base)
}

// testMissingDependency opens the page of a policy whose dependency is not
// on the hub: its Dependencies table says so as its cluster cards do.
func testMissingDependency(t *testing.T, b *browser.Browser, base string) {
	g := NewWithT(t)
	g.Expect(b.Navigate(base + "/policies/policies/needs-missing")).To(Succeed())
	g.Eventually(func() (string, error) {
		return b.Text("#dependencies td.now")
	}).WithTimeout(30 * time.Second).Should(Equal("not found"))
	g.Eventually(func() (string, error) { // the cluster's report may come after the hub's view
		return b.Text(`#clusters article[data-cluster="prod-east"] .unmet`)
	}).WithTimeout(30 * time.Second).Should(Equal("Waiting for Policy policies/not-there: not found"))
}

// testSetPage opens the PolicySet's page: its members on each cluster,
// the member that holds it back, its graph.
func testSetPage(t *testing.T, b *browser.Browser, base string) {
	g := NewWithT(t)
	g.Expect(b.Navigate(base + "/policysets/policies/" + certManagerSet)).To(Succeed())
	g.Eventually(func() (string, error) {
		return b.Text(`#held-back li[data-cluster="prod-west"]`)
	}).WithTimeout(30 * time.Second).Should(HavePrefix("prod-west: install-cert-manager NonCompliant"))
	g.Expect(b.Text("#overall")).To(Equal("NonCompliant"))
	var members []string
	g.Expect(b.Eval(`Array.from(document.querySelectorAll('#members tbody tr')).map(function (tr) {
		return tr.dataset.policy + ' ' + Array.from(tr.querySelectorAll('td.cell .state')).map(function (td) { return td.innerText; }).join(' ');
	})`, &members)).To(Succeed())
	g.Expect(members).To(Equal([]string{
		"policies/install-cert-manager Compliant NonCompliant Compliant",
		"policies/cert-manager-issuer Compliant Pending Compliant",
	}), "members in spec order")
	var set dashboard.SetView
	g.Expect(getJSON(base+"/api/policysets/policies/"+certManagerSet, &set)).To(Succeed())
	expectGraphAsAPI(g, b, set.Graph)
	g.Expect(b.Nodes(`svg#graph g.node.focus[data-node="PolicySet/policies/cert-manager"]`)).To(HaveLen(1))
	g.Expect(b.Text("#rollouts")).To(Equal("No member has a rollout strategy."))
	screenshot(t, b, "set")
	g.Expect(b.Navigate(base + "/policies/policies/ordered-install")).To(Succeed())
	time.Sleep(time.Second)
	screenshot(t, b, "policy")
}

func saveScreenshot(t *testing.T, b *browser.Browser) {
	g := NewWithT(t)
	png, err := b.Screenshot()
	g.Expect(err).NotTo(HaveOccurred())
	root, err := controlplane.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(filepath.Join(root, "docs", "dashboard.png"), png, 0o600)).To(Succeed())
}
