package ops_test

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// monitoringDir holds the PrometheusRule, its promtool tests and the
// Grafana dashboard.
const monitoringDir = "../../deploy/monitoring"

// TestPrometheusRules runs promtool on the rules of
// deploy/monitoring/prometheusrule.yaml: `promtool check rules`, then the
// unit tests of rules-test.yaml. Without promtool (Debian's prometheus
// package has it) the test is skipped, or fails when $CI is true.
func TestPrometheusRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
			t.Fatalf("the rules' tests need promtool (apt-get install prometheus): %v", err)
		}
		t.Skipf("skipping the rules' tests: %v (apt-get install prometheus)", err)
	}
	g := NewWithT(t)
	dir := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(dir, "rules.yaml"), ruleGroups(g), 0o600)).To(Succeed())
	tests, err := os.ReadFile(filepath.Join(monitoringDir, "rules-test.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(filepath.Join(dir, "rules-test.yaml"), tests, 0o600)).To(Succeed())
	for _, args := range [][]string{{"check", "rules", "rules.yaml"}, {"test", "rules", "rules-test.yaml"}} {
		cmd := exec.CommandContext(t.Context(), promtool, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		g.Expect(err).NotTo(HaveOccurred(), "promtool %v:\n%s", args, out)
	}
}

// TestMonitoringBuilds builds deploy/monitoring with kustomize: the
// PrometheusRule and the dashboard's ConfigMap, labelled for Grafana's
// sidecar, holding deploy/monitoring/grafana-dashboard.json.
func TestMonitoringBuilds(t *testing.T) {
	g := NewWithT(t)
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), monitoringDir)
	g.Expect(err).NotTo(HaveOccurred())
	var kinds []string
	for _, r := range res.Resources() {
		kinds = append(kinds, r.GetKind()+"/"+r.GetName())
		if r.GetKind() == "ConfigMap" {
			g.Expect(r.GetLabels()).To(HaveKeyWithValue("grafana_dashboard", "1"))
			dashboard, err := os.ReadFile(filepath.Join(monitoringDir, "grafana-dashboard.json"))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(r.GetDataMap()).To(HaveKeyWithValue("grafana-dashboard.json", string(dashboard)))
		}
	}
	g.Expect(kinds).To(ConsistOf("PrometheusRule/canopy", "ConfigMap/canopy-grafana-dashboard"))
}

// TestMonitoringUsesExportedMetrics scrapes the metrics the fleet's hub and
// agent export (one registry: they run in this process), once every series
// the rules need is there (the fleet has a NonCompliant and a Pending
// policy, a hub template that fails, a replica the hub cannot write, a
// stopped rollout and an agent renewing its Lease), and checks that every
// metric an alert rule or a dashboard panel queries is among them.
func TestMonitoringUsesExportedMetrics(t *testing.T) {
	settledFleet(t)
	g := NewWithT(t)
	used := map[string][]string{} // metric name -> the rules and panels that query it
	for _, r := range ruleExprs(g) {
		for _, name := range metricNames(r.expr) {
			used[name] = append(used[name], "rule "+r.name)
		}
	}
	for _, p := range panelExprs(g) {
		for _, name := range metricNames(p.expr) {
			used[name] = append(used[name], "panel "+p.name)
		}
	}
	g.Expect(used).To(HaveKey("canopy_policy_compliance"), "the extraction finds the metrics")
	g.Expect(used).To(HaveKey("canopy_propagator_reconcile_duration_seconds_bucket"), "the extraction finds the metrics")

	url := serveMetrics(t)
	g.Eventually(func(g Gomega) {
		exported := scrape(g, url)
		for name, users := range used {
			g.Expect(exported.Has(name)).To(BeTrue(), "%s, queried by %v, is not among the metrics the hub and the agent export:\n%v",
				name, users, sets.List(exported))
		}
	}, eventually, poll).Should(Succeed())
}

// named is a query of a rule or a panel.
type named struct{ name, expr string }

// prometheusRule is what the tests read of the PrometheusRule.
type prometheusRule struct {
	Spec struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Alert string `json:"alert"`
				Expr  string `json:"expr"`
			} `json:"rules"`
		} `json:"groups"`
	} `json:"spec"`
}

// ruleGroups returns the spec of deploy/monitoring/prometheusrule.yaml, a
// Prometheus rule file.
func ruleGroups(g Gomega) []byte {
	data, err := os.ReadFile(filepath.Join(monitoringDir, "prometheusrule.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var rule map[string]any
	g.Expect(yaml.Unmarshal(data, &rule)).To(Succeed())
	out, err := yaml.Marshal(rule["spec"])
	g.Expect(err).NotTo(HaveOccurred())
	return out
}

// ruleExprs returns the expression of each alert of the PrometheusRule.
func ruleExprs(g Gomega) []named {
	data, err := os.ReadFile(filepath.Join(monitoringDir, "prometheusrule.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var rule prometheusRule
	g.Expect(yaml.Unmarshal(data, &rule)).To(Succeed())
	var out []named
	for _, group := range rule.Spec.Groups {
		for _, r := range group.Rules {
			out = append(out, named{r.Alert, r.Expr})
		}
	}
	g.Expect(out).NotTo(BeEmpty())
	return out
}

// grafanaDashboard is what the tests read of the dashboard.
type grafanaDashboard struct {
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// panelExprs returns the query of each target of each dashboard panel.
func panelExprs(g Gomega) []named {
	data, err := os.ReadFile(filepath.Join(monitoringDir, "grafana-dashboard.json"))
	g.Expect(err).NotTo(HaveOccurred())
	var d grafanaDashboard
	g.Expect(yaml.Unmarshal(data, &d)).To(Succeed())
	var out []named
	for _, p := range d.Panels {
		g.Expect(p.Targets).NotTo(BeEmpty(), "panel %q", p.Title)
		for _, target := range p.Targets {
			g.Expect(target.Expr).NotTo(BeEmpty(), "panel %q", p.Title)
			out = append(out, named{p.Title, target.Expr})
		}
	}
	return out
}

var (
	// promqlStrings, promqlMatchers, promqlRanges, promqlLabelLists and
	// promqlOffsets are the parts of a PromQL query that hold no metric name.
	promqlStrings    = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`)
	promqlMatchers   = regexp.MustCompile(`\{[^}]*\}`)
	promqlRanges     = regexp.MustCompile(`\[[^\]]*\]`)
	promqlLabelLists = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promqlOffsets    = regexp.MustCompile(`\boffset\s+-?[0-9a-z]+`)
	// promqlName is an identifier; followed by "(" it is a function.
	promqlName = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?`)
	// promqlNumber is a number literal, whose exponent looks like a name.
	promqlNumber = regexp.MustCompile(`\b[0-9][0-9.]*(?:e[+-]?[0-9]+)?\b`)
	// promqlKeywords are the identifiers that are not metric names.
	promqlKeywords = []string{"and", "or", "unless", "bool", "inf", "nan", "Inf", "NaN"}
)

// metricNames returns the metric names a PromQL query selects.
func metricNames(expr string) []string {
	for _, re := range []*regexp.Regexp{promqlStrings, promqlMatchers, promqlRanges, promqlLabelLists, promqlOffsets, promqlNumber} {
		expr = re.ReplaceAllString(expr, " ")
	}
	var names []string
	for _, m := range promqlName.FindAllStringSubmatch(expr, -1) {
		if m[2] != "" || slices.Contains(promqlKeywords, m[1]) {
			continue
		}
		names = append(names, m[1])
	}
	return names
}

// serveMetrics serves the registry the hub's and the agent's metrics are
// in, as their metrics endpoint does, until the test ends.
func serveMetrics(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + l.Addr().String() + "/metrics"
}

// scrape returns the name of every series url serves, histograms' and
// summaries' as queried (_bucket, _sum, _count).
func scrape(g Gomega, url string) sets.Set[string] {
	resp, err := http.Get(url) //nolint:gosec,noctx // the test's own loopback server
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	names := sets.New[string]()
	for name, f := range families {
		if len(f.GetMetric()) == 0 {
			continue
		}
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM:
			names.Insert(name+"_bucket", name+"_sum", name+"_count")
		case dto.MetricType_SUMMARY:
			names.Insert(name, name+"_sum", name+"_count")
		default:
			names.Insert(name)
		}
	}
	return names
}
