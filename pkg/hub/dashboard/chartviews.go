package dashboard

import (
	"bytes"
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/canopy-policy/canopy/pkg/history"
)

// PolicyChart is the answer of /api/charts/policies/{namespace}/{name}:
// how many clusters the policy was Compliant, NonCompliant, Pending or
// history-incomplete on, per bucket of the window, and how long it took
// to remediate.
type PolicyChart struct {
	// Namespace is the root policy's namespace.
	Namespace string `json:"namespace"`
	// Name is the root policy's name.
	Name string `json:"name"`
	// Hub is the hub asked for; empty means every hub in the store.
	Hub string `json:"hub,omitempty"`
	// Window names the window shown (1h, 24h, 7d or 30d).
	Window string `json:"window"`
	// Windows name the windows one may ask for, shortest first.
	Windows []string `json:"windows"`
	// Start is when the first bucket begins.
	Start time.Time `json:"start"`
	// StepSeconds is the length of a bucket.
	StepSeconds int64 `json:"stepSeconds"`
	// Updated is when the answer was computed: the last bucket ends here.
	Updated time.Time `json:"updated"`
	// Truncated is true when the policy has more transitions than one
	// answer reads: the oldest were left out, and each template is
	// counted as history-incomplete until its first transition read.
	Truncated bool `json:"truncated,omitempty"`
	// Clusters is how many clusters have history of the policy.
	Clusters int `json:"clusters"`
	// Buckets are the counts, oldest first.
	Buckets []Bucket `json:"buckets"`
	// Remediation is the time to remediate in the window.
	Remediation Remediation `json:"remediation"`
}

// ClusterTimeline is the answer of /api/charts/clusters/{cluster}: the
// state of each policy on one cluster over the window.
type ClusterTimeline struct {
	// Cluster is the managed cluster.
	Cluster string `json:"cluster"`
	// Hub is the hub asked for; empty means every hub in the store.
	Hub string `json:"hub,omitempty"`
	// Window names the window shown.
	Window string `json:"window"`
	// Windows name the windows one may ask for, shortest first.
	Windows []string `json:"windows"`
	// Start is when the window begins.
	Start time.Time `json:"start"`
	// Updated is when the answer was computed: the window ends here.
	Updated time.Time `json:"updated"`
	// Truncated is true when more transitions matched than one answer
	// reads (see PolicyChart).
	Truncated bool `json:"truncated,omitempty"`
	// Policies are the policies with history on the cluster, by
	// namespace, name and hub.
	Policies []PolicyTimeline `json:"policies"`
}

// PolicyTimeline is the state of one policy on a cluster over a window.
type PolicyTimeline struct {
	// Hub is the hub that recorded it.
	Hub string `json:"hub"`
	// Namespace is the root policy's namespace.
	Namespace string `json:"namespace"`
	// Name is the root policy's name.
	Name string `json:"name"`
	// Spans are its states in the window, oldest first; the last one lasts
	// until Updated.
	Spans []Span `json:"spans"`
}

// newPolicyChart draws the chart of policy in w from res, its history.
func newPolicyChart(policy history.Policy, hub string, res history.Result, truncated bool, w ChartWindow, now time.Time) PolicyChart {
	cells := cellSpans(res, truncated, now)
	start, n := w.bounds(now)
	return PolicyChart{
		Namespace: policy.Namespace, Name: policy.Name, Hub: hub, Window: w.Name, Windows: windowNames(),
		Start: start, StepSeconds: int64(w.Step / time.Second), Updated: now, Truncated: truncated,
		Clusters: len(cells), Buckets: buckets(cells, start, w.Step, n, now), Remediation: remediation(cells, start),
	}
}

// newClusterTimeline draws the timeline of cluster in w from res, its
// history.
func newClusterTimeline(cluster, hub string, res history.Result, truncated bool, w ChartWindow, now time.Time) ClusterTimeline {
	start, _ := w.bounds(now)
	view := ClusterTimeline{Cluster: cluster, Hub: hub, Window: w.Name, Windows: windowNames(), Start: start, Updated: now, Truncated: truncated,
		Policies: []PolicyTimeline{}}
	for k, spans := range cellSpans(res, truncated, now) {
		if k.Cluster != cluster {
			continue
		}
		if spans = clip(spans, start, now); len(spans) > 0 {
			view.Policies = append(view.Policies, PolicyTimeline{Hub: k.Hub, Namespace: k.Policy.Namespace, Name: k.Policy.Name, Spans: spans})
		}
	}
	slices.SortFunc(view.Policies, func(a, b PolicyTimeline) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Hub, b.Hub))
	})
	return view
}

// chartRows is what a chart is drawn from.
type chartRows struct {
	// res is the stored history, the newest historyLimitRows transitions.
	res history.Result
	// truncated says that older transitions were left out.
	truncated bool
	// window is the window asked for, or the one that fits res.
	window ChartWindow
}

// readChartRows reads the whole stored history q selects (up to the
// dashboard's row limit), for a chart: what happened before the window
// decides the state it begins with. When it fails, it has answered the
// request and returns false.
func (s *Server) readChartRows(w http.ResponseWriter, r *http.Request, q history.Query) (chartRows, bool) {
	if s.noHistory(w) {
		return chartRows{}, false
	}
	res, truncated, ok := s.readHistory(w, r, q)
	if !ok {
		return chartRows{}, false
	}
	window, ok := chartWindow(r.URL.Query().Get("window"), earliest(res), time.Now())
	if !ok {
		http.Error(w, "window: want one of "+strings.Join(windowNames(), ", "), http.StatusBadRequest)
		return chartRows{}, false
	}
	return chartRows{res: res, truncated: truncated, window: window}, true
}

// policyChartAPI answers GET /api/charts/policies/{namespace}/{name} with
// ?window= (1h, 24h, 7d or 30d; without it, the shortest that holds the
// policy's history) and ?hub=.
func (s *Server) policyChartAPI(w http.ResponseWriter, r *http.Request) {
	policy := history.Policy{Namespace: r.PathValue("namespace"), Name: r.PathValue("name")}
	hub := r.URL.Query().Get("hub")
	rows, ok := s.readChartRows(w, r, history.Query{Hub: hub, Policies: []history.Policy{policy}})
	if !ok {
		return
	}
	writeJSON(w, newPolicyChart(policy, hub, rows.res, rows.truncated, rows.window, time.Now()))
}

// clusterChartAPI answers GET /api/charts/clusters/{cluster} with ?window=
// and ?hub=, as policyChartAPI.
func (s *Server) clusterChartAPI(w http.ResponseWriter, r *http.Request) {
	cluster, hub := r.PathValue("cluster"), r.URL.Query().Get("hub")
	rows, ok := s.readChartRows(w, r, history.Query{Hub: hub, Cluster: cluster})
	if !ok {
		return
	}
	writeJSON(w, newClusterTimeline(cluster, hub, rows.res, rows.truncated, rows.window, time.Now()))
}

// clusterPageData is what cluster.html gets.
type clusterPageData struct {
	page
	// Cluster is the managed cluster the page is about.
	Cluster string
}

// clusterPage serves GET /clusters/{cluster}: the timeline of the
// cluster's policies, drawn from /api/charts/clusters/{cluster}.
func (s *Server) clusterPage(w http.ResponseWriter, r *http.Request) {
	cluster := r.PathValue("cluster")
	data := clusterPageData{Cluster: cluster, page: page{Title: cluster + " · cluster · Canopy", Page: "cluster",
		API: "/api/charts/clusters/" + cluster, Refresh: s.refreshMillis()}}
	var buf bytes.Buffer
	if err := s.pages.ExecuteTemplate(&buf, "cluster.html", data); err != nil {
		s.fail(w, fmt.Errorf("rendering cluster.html: %w", err))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = buf.WriteTo(w)
}

// windowNames lists the windows' names, shortest first.
func windowNames() []string {
	names := make([]string, 0, len(ChartWindows))
	for _, w := range ChartWindows {
		names = append(names, w.Name)
	}
	return names
}
