package dashboard_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/browser"
	"github.com/canopy-policy/canopy/internal/test/capture"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/pkg/history"
	"github.com/canopy-policy/canopy/pkg/hub/dashboard"
)

// chartsNS holds the root policies of TestDashboardCharts.
const chartsNS = "charts"

// chartHistory is a known history of policy charts/audited on three
// clusters and charts/other on c3, relative to base (a multiple of 15
// minutes, so that each time begins a bucket of every window up to 24h):
//
//	c1  NonCompliant at -3d, Compliant at -3d+1h, Pending at 0, Compliant at 1h
//	c2  NonCompliant at 0, Compliant at 2h
//	c3  Compliant at 30m; a gap from 3h to 4h; NonCompliant at 4h, Compliant at 5h,
//	    NonCompliant at 6h, Compliant at 6h30m; charts/other Pending at 1h, Compliant at 1h10m
func chartHistory(base time.Time) ([]history.Transition, []history.Gap) {
	audited, other := history.Policy{Namespace: chartsNS, Name: "audited"}, history.Policy{Namespace: chartsNS, Name: "other"}
	at := func(cluster string, p history.Policy, state string, after time.Duration) history.Transition {
		return history.Transition{Hub: "hub-a", Cluster: cluster, Policy: p, Template: "cfg", State: state,
			Message: "reported " + state, At: base.Add(after)}
	}
	return []history.Transition{
			at("c1", audited, "NonCompliant", -72*time.Hour), at("c1", audited, "Compliant", -71*time.Hour),
			at("c1", audited, "Pending", 0), at("c1", audited, "Compliant", time.Hour),
			at("c2", audited, "NonCompliant", 0), at("c2", audited, "Compliant", 2*time.Hour),
			at("c3", audited, "Compliant", 30*time.Minute), at("c3", audited, "NonCompliant", 4*time.Hour),
			at("c3", audited, "Compliant", 5*time.Hour), at("c3", audited, "NonCompliant", 6*time.Hour),
			at("c3", audited, "Compliant", 6*time.Hour+30*time.Minute),
			at("c3", other, "Pending", time.Hour), at("c3", other, "Compliant", time.Hour+10*time.Minute),
		}, []history.Gap{{Hub: "hub-a", Cluster: "c3", Policy: audited, Template: "cfg",
			From: base.Add(3 * time.Hour), To: base.Add(4 * time.Hour)}}
}

// TestDashboardCharts serves the dashboard over a SQLite history store
// holding chartHistory, and reads its charts in a real headless Chromium:
// the counts per bucket, the state carried from before the window, a gap
// drawn as history incomplete, time to remediate, the window buttons and a
// cluster's timeline.
func TestDashboardCharts(t *testing.T) {
	g := NewWithT(t)
	// Note: a control plane of its own, as the suite's matrix lists every
	// root policy on its hub.
	c := controlplane.ForTest(t, "charts").Client
	ctx := t.Context()
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: chartsNS}})).To(Succeed())
	g.Expect(c.Create(ctx, &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: chartsNS, Name: "audited"},
		Spec: policyv1.PolicySpec{PolicyTemplates: []policyv1.PolicyTemplate{}}})).To(Succeed())

	// A hub that records no history has no chart, and says so.
	without, err := (&dashboard.Server{Reader: c, APIReader: c}).Handler()
	g.Expect(err).NotTo(HaveOccurred())
	none := httptest.NewServer(without)
	t.Cleanup(none.Close)
	g.Expect(get(none.URL + "/api/charts/policies/charts/audited")).To(MatchError(ContainSubstring("404")))

	db := filepath.Join(t.TempDir(), "history.db")
	store, err := history.Open(ctx, db)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(store.Close()).To(Succeed()) })
	base := time.Now().UTC().Truncate(15 * time.Minute).Add(-10 * time.Hour)
	transitions, gaps := chartHistory(base)
	_, err = store.Write(ctx, transitions, gaps)
	g.Expect(err).NotTo(HaveOccurred())

	server := &dashboard.Server{Reader: c, APIReader: c, RefreshInterval: 300 * time.Millisecond,
		History: dashboard.NewHistoryReader(db)}
	handler, err := server.Handler()
	g.Expect(err).NotTo(HaveOccurred())
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	g.Expect(get(srv.URL + "/api/charts/policies/charts/audited?window=2h")).To(MatchError(ContainSubstring("400")))

	b := browser.Start(t, chromedp.WindowSize(1280, 900))
	// Every Content-Security-Policy violation is kept, from before the
	// page's own scripts run.
	g.Expect(b.Run(chromedp.ActionFunc(func(ctx context.Context) error {
		_, err := page.AddScriptToEvaluateOnNewDocument(`window.cspViolations = [];
document.addEventListener('securitypolicyviolation', function (e) { window.cspViolations.push(e.violatedDirective + ' ' + e.blockedURI); });`).Do(ctx)
		return err
	}))).To(Succeed())
	testPolicyChart(t, b, srv.URL, base)
	testClusterTimeline(t, b, srv.URL, base)

	// An open page follows what the hub records next, without a reload.
	g.Expect(b.Navigate(srv.URL + "/clusters/c3#window=1h")).To(Succeed())
	g.Eventually(func() (string, error) { return b.Text(`#timeline-policies li[data-policy="charts/other"]`) }).
		WithTimeout(30 * time.Second).Should(Equal("charts/other Compliant"))
	_, err = store.Write(ctx, []history.Transition{{Hub: "hub-a", Cluster: "c3", Policy: history.Policy{Namespace: chartsNS, Name: "other"},
		Template: "cfg", State: "NonCompliant", Message: "drifted", At: time.Now().Add(-time.Second)}}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() (string, error) { return b.Text(`#timeline-policies li[data-policy="charts/other"]`) }).
		WithTimeout(30 * time.Second).Should(Equal("charts/other NonCompliant"))

	g.Expect(b.Navigate(none.URL + "/policies/charts/audited")).To(Succeed())
	g.Eventually(func() (string, error) { return b.Text("figure[data-chart] figcaption") }).WithTimeout(30 * time.Second).
		Should(Equal("No chart: this hub records no compliance history (--history-database=none)"))
}

// drawnChart is what the page exposes of a policy's chart: the window,
// the table's counts by bucket start, and the data Chart.js was given.
type drawnChart struct {
	Window string `json:"window"`
	// Table maps a bucket's start to its counts: Compliant, NonCompliant,
	// Pending, History incomplete.
	Table map[string][4]int `json:"table"`
	// Rows is how many buckets the table has.
	Rows int `json:"rows"`
	// Datasets maps a dataset's label to its data, as Chart.js holds it.
	Datasets map[string][]int `json:"datasets"`
	// Starts are the buckets' starts, in order.
	Starts []string `json:"starts"`
}

const readChart = `(function () {
var f = document.querySelector('figure[data-chart]');
var out = {window: f.dataset.window || '', table: {}, rows: 0, datasets: {}, starts: []};
document.querySelectorAll('#chart-table tbody tr').forEach(function (tr) {
  out.table[tr.dataset.start] = Array.from(tr.querySelectorAll('td.count')).map(function (td) { return Number(td.textContent); });
  out.starts.push(tr.dataset.start);
  out.rows++;
});
var chart = Chart.getChart(f.querySelector('canvas'));
if (chart) { chart.data.datasets.forEach(function (d) { out.datasets[d.label] = d.data; }); }
return out;
})()`

// chartOf waits until the page shows the chart in window, and returns it.
func chartOf(g Gomega, b *browser.Browser, window string) drawnChart {
	var chart drawnChart
	g.Eventually(func(g Gomega) {
		chart = drawnChart{} // Note: decoding into a map adds to what it holds
		g.Expect(b.Eval(readChart, &chart)).To(Succeed())
		g.Expect(chart.Window).To(Equal(window))
		g.Expect(chart.Rows).To(BeNumerically(">", 0))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	// The chart draws what the table says, bucket by bucket.
	for i, label := range []string{"Compliant", "NonCompliant", "Pending", "History incomplete"} {
		g.Expect(chart.Datasets).To(HaveKeyWithValue(label, HaveLen(chart.Rows)))
		for j, start := range chart.Starts {
			g.Expect(chart.Datasets[label][j]).To(Equal(chart.Table[start][i]), "%s at %s", label, start)
		}
	}
	return chart
}

func testPolicyChart(t *testing.T, b *browser.Browser, base string, t0 time.Time) {
	g := NewWithT(t)
	g.Expect(b.Navigate(base + "/policies/charts/audited#window=24h")).To(Succeed())
	chart := chartOf(g, b, "24h")
	g.Expect(chart.Rows).To(Equal(96))
	at := func(d time.Duration) string { return t0.Add(d).Format(time.RFC3339) }
	for start, counts := range map[string][4]int{
		at(-15 * time.Minute):            {1, 0, 0, 0}, // c1's state carried from three days before
		at(0):                            {0, 1, 1, 0},
		at(30 * time.Minute):             {1, 1, 1, 0},
		at(time.Hour):                    {2, 1, 0, 0},
		at(2 * time.Hour):                {3, 0, 0, 0},
		at(3 * time.Hour):                {2, 0, 0, 1}, // c3's gap: history incomplete, not compliant
		at(4 * time.Hour):                {2, 1, 0, 0},
		at(5 * time.Hour):                {3, 0, 0, 0},
		at(6 * time.Hour):                {2, 1, 0, 0},
		at(6*time.Hour + 30*time.Minute): {3, 0, 0, 0},
		at(9*time.Hour + 45*time.Minute): {3, 0, 0, 0},
	} {
		g.Expect(chart.Table).To(HaveKeyWithValue(start, counts), start)
	}
	var remediation map[string]string
	g.Expect(b.Eval(`Object.assign({text: document.getElementById('remediation').innerText}, document.getElementById('remediation').dataset)`,
		&remediation)).To(Succeed())
	g.Expect(remediation).To(Equal(map[string]string{"count": "2", "p50": "1800", "p90": "7200", "open": "0", "unmeasured": "1",
		"text": "Time to remediate (NonCompliant → Compliant) in this window: p50 30m, p90 2h over 2 remediations; 1 not measured (a gap in the history)."}))
	g.Expect(b.Text("figure[data-chart] figcaption")).To(Equal("3 clusters have history of this policy."))
	g.Expect(b.Text(".windows button[aria-pressed=true]")).To(Equal("24h"))
	var violations, foreign []string
	g.Expect(b.Eval(`window.cspViolations`, &violations)).To(Succeed())
	g.Expect(violations).To(BeEmpty(), "Chart.js draws within the dashboard's Content-Security-Policy")
	g.Expect(b.Eval(`performance.getEntriesByType('resource').map(function (r) { return r.name; }).filter(function (n) {
		return n.indexOf(location.origin + '/') !== 0; })`, &foreign)).To(Succeed())
	g.Expect(foreign).To(BeEmpty(), "the page loads nothing from elsewhere")
	var version string
	g.Expect(b.Eval(`Chart.version`, &version)).To(Succeed())
	g.Expect(version).To(Equal("4.6.1"), "the vendored Chart.js (static/vendor/README.md)")
	if capture.Enabled() {
		var png []byte
		g.Expect(b.Run(chromedp.Screenshot("#over-time", &png, chromedp.ByQuery))).To(Succeed())
		capture.Write(t, "history-chart.png", png)
	}

	// One hour: every cluster in the state it was in when the hour began.
	g.Expect(b.Click(`.windows button[data-window="1h"]`)).To(Succeed())
	chart = chartOf(g, b, "1h")
	g.Expect(chart.Rows).To(Equal(60))
	for start, counts := range chart.Table {
		g.Expect(counts).To(Equal([4]int{3, 0, 0, 0}), start)
	}
	var hash string
	g.Expect(b.Eval(`location.hash`, &hash)).To(Succeed())
	g.Expect(hash).To(Equal("#window=1h"), "the window is in the address, for a link or a reload")
	g.Expect(b.Text("#remediation")).To(ContainSubstring("no remediation"))

	// Seven days: c1's remediation three days ago counts too.
	g.Expect(b.Click(`.windows button[data-window="7d"]`)).To(Succeed())
	chart = chartOf(g, b, "7d")
	g.Expect(chart.Rows).To(Equal(84))
	g.Eventually(func() (string, error) {
		var p50 string
		err := b.Eval(`document.getElementById('remediation').dataset.count + ' ' + document.getElementById('remediation').dataset.p50 + ' ' + document.getElementById('remediation').dataset.p90`, &p50)
		return p50, err
	}).WithTimeout(30 * time.Second).Should(Equal("3 3600 7200"))
}

func testClusterTimeline(t *testing.T, b *browser.Browser, base string, t0 time.Time) {
	g := NewWithT(t)
	g.Expect(b.Navigate(base + "/clusters/c3#window=24h")).To(Succeed())
	type span struct{ Policy, From, To, State string }
	var spans []span
	g.Eventually(func(g Gomega) {
		g.Expect(b.Eval(`Array.from(document.querySelectorAll('#timeline-table tbody tr')).map(function (tr) {
			return {Policy: tr.dataset.policy, From: tr.dataset.from, To: tr.dataset.to, State: tr.dataset.state}; })`, &spans)).To(Succeed())
		g.Expect(spans).To(HaveLen(8))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	at := func(d time.Duration) string { return t0.Add(d).Format(time.RFC3339) }
	audited, other := "charts/audited", "charts/other"
	last := spans[5].To // the answer's time
	g.Expect(spans).To(Equal([]span{
		{audited, at(30 * time.Minute), at(3 * time.Hour), "Compliant"},
		{audited, at(3 * time.Hour), at(4 * time.Hour), "Incomplete"},
		{audited, at(4 * time.Hour), at(5 * time.Hour), "NonCompliant"},
		{audited, at(5 * time.Hour), at(6 * time.Hour), "Compliant"},
		{audited, at(6 * time.Hour), at(6*time.Hour + 30*time.Minute), "NonCompliant"},
		{audited, at(6*time.Hour + 30*time.Minute), last, "Compliant"},
		{other, at(time.Hour), at(time.Hour + 10*time.Minute), "Pending"},
		{other, at(time.Hour + 10*time.Minute), last, "Compliant"},
	}))
	g.Expect(b.Text("#timeline-policies")).To(Equal("charts/audited Compliant\ncharts/other Compliant"))
	g.Expect(b.Nodes(`#timeline-policies a[href="/policies/charts/audited"]`)).To(HaveLen(1), "each policy links its page")
	var bars map[string]int
	g.Expect(b.Eval(`(function () { var out = {};
		Chart.getChart(document.querySelector('figure[data-chart] canvas')).data.datasets.forEach(function (d) { out[d.label] = d.data.length; });
		return out; })()`, &bars)).To(Succeed())
	g.Expect(bars).To(Equal(map[string]int{"Compliant": 4, "NonCompliant": 2, "Pending": 1, "History incomplete": 1}))
	g.Expect(b.Text("#updated")).To(HavePrefix("Last updated"))
	if capture.Enabled() {
		var png []byte
		g.Expect(b.Run(chromedp.Screenshot("#over-time", &png, chromedp.ByQuery))).To(Succeed())
		capture.Write(t, "history-timeline.png", png)
	}
	g.Expect(get(base+"/clusters/nowhere")).To(Succeed(), "a cluster without history has a page that says so")
	g.Expect(b.Navigate(base + "/clusters/nowhere")).To(Succeed())
	g.Eventually(func() (string, error) { return b.Text("figure[data-chart] figcaption") }).WithTimeout(30 * time.Second).
		Should(Equal("No compliance history of this cluster in the window."))
	resp, err := http.Get(base + "/api/charts/clusters/c3?window=1h") //nolint:noctx // a test's loopback URL
	g.Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
}
