package dashboard

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/ptr"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/compliance"
	"github.com/canopy-policy/canopy/pkg/history"
	"github.com/canopy-policy/canopy/pkg/historyview"
)

// DefaultFleetStaleAfter is how long a hub may go without writing to the
// shared history before the fleet view calls its data stale.
const DefaultFleetStaleAfter = time.Hour

// fleetPageRefresh is how often the fleet page reloads itself.
const fleetPageRefresh = 30 * time.Second

// How recent a hub's data is in the fleet view (FleetHub.Freshness).
const (
	FreshnessRecent  = historyview.FreshnessRecent
	FreshnessStale   = historyview.FreshnessStale
	FreshnessUnknown = historyview.FreshnessUnknown
)

// ErrFleetNeedsDashboard is returned by CheckFleet for a hub that serves no
// dashboard.
var ErrFleetNeedsDashboard = errors.New("--fleet is a view of the dashboard: set --dashboard-address too")

// CheckFleet returns why a hub cannot serve the fleet view: it serves no
// dashboard (address empty), or its history database is not PostgreSQL
// (history.ErrFleetNeedsPostgres).
func CheckFleet(address, database string) error {
	if address == "" {
		return ErrFleetNeedsDashboard
	}
	return history.CheckFleet(database)
}

// FleetReader opens the history database several hubs share for the fleet
// view on first use, and again after a failure to open it.
type FleetReader struct {
	// StaleAfter is how long a hub may go without writing before its data
	// is stale; DefaultFleetStaleAfter when zero.
	StaleAfter time.Duration

	url string
	hub string

	mu    sync.Mutex
	store history.FleetStore
}

// NewFleetReader returns a reader of the PostgreSQL history at url, for the
// dashboard of hub (its --hub-name, listed even before it writes anything).
// Check url with CheckFleet first.
func NewFleetReader(url, hub string) *FleetReader {
	return &FleetReader{url: url, hub: hub}
}

// read returns what the database holds of every hub.
func (f *FleetReader) read(ctx context.Context) (history.Fleet, error) {
	f.mu.Lock()
	if f.store == nil {
		s, err := history.OpenFleet(ctx, f.url)
		if err != nil {
			f.mu.Unlock()
			return history.Fleet{}, fmt.Errorf("opening the history database: %w", err)
		}
		f.store = s
	}
	store := f.store
	f.mu.Unlock()
	return store.Fleet(ctx)
}

// FleetView is the answer of /api/fleet (historyview, with which the CLI
// decodes it).
type FleetView = historyview.FleetView

// FleetHub is one hub of a FleetView.
type FleetHub = historyview.FleetHub

// FleetCluster is one managed cluster of a FleetHub.
type FleetCluster = historyview.FleetCluster

// FleetCell is one policy on a FleetCluster.
type FleetCell = historyview.FleetCell

// FleetPolicy is one policy of a FleetView, rolled up across hubs.
type FleetPolicy = historyview.FleetPolicy

// newFleetView groups f by hub and cluster and rolls its policies up across
// hubs. self is the serving hub, listed even when the database holds
// nothing of it.
func newFleetView(f history.Fleet, self string, staleAfter time.Duration) FleetView {
	hubs := fleetHubs(f, self, staleAfter)
	return FleetView{
		Hub: self, ReadAt: f.ReadAt, StaleAfter: staleAfter.String(),
		Hubs: hubs, Policies: rollUp(hubs),
	}
}

// replicaKey names one replica of one hub.
type replicaKey struct {
	hub, cluster string
	policy       history.Policy
}

// fleetHubs returns every hub of f, and self, by name, each with its data
// age and its clusters, by name, each with its policies, by namespace and
// name.
func fleetHubs(f history.Fleet, self string, staleAfter time.Duration) []FleetHub {
	hubs := map[string]*FleetHub{self: {Name: self}}
	for _, a := range f.Hubs {
		h := &FleetHub{Name: a.Hub, LastWrite: ptr.To(a.LastWrite)}
		if !a.NewestEvent.IsZero() {
			h.NewestEvent = ptr.To(a.NewestEvent)
		}
		hubs[a.Hub] = h
	}
	// A replica's cell combines the newest state of each of its templates.
	states := map[replicaKey][]policyv1.ComplianceState{}
	asOf := map[replicaKey]time.Time{}
	for _, st := range f.States {
		k := replicaKey{st.Hub, st.Cluster, st.Policy}
		states[k] = append(states[k], policyv1.ComplianceState(st.State))
		if st.At.After(asOf[k]) {
			asOf[k] = st.At
		}
	}
	clusters := map[string]map[string][]FleetCell{} // hub → cluster → cells
	for k, s := range states {
		if hubs[k.hub] == nil {
			hubs[k.hub] = &FleetHub{Name: k.hub} // not in one snapshot; if ever, shown as unknown, never hidden
		}
		if clusters[k.hub] == nil {
			clusters[k.hub] = map[string][]FleetCell{}
		}
		clusters[k.hub][k.cluster] = append(clusters[k.hub][k.cluster], FleetCell{Policy: k.policy, Compliant: compliance.Aggregate(s...), AsOf: asOf[k]})
	}
	out := make([]FleetHub, 0, len(hubs))
	for name, h := range hubs {
		setFreshness(h, f.ReadAt, staleAfter)
		h.Clusters = []FleetCluster{}
		for cluster, cells := range clusters[name] {
			slices.SortFunc(cells, func(a, b FleetCell) int { return comparePolicies(a.Policy, b.Policy) })
			var s []policyv1.ComplianceState
			for _, cell := range cells {
				s = append(s, cell.Compliant)
			}
			h.Clusters = append(h.Clusters, FleetCluster{Name: cluster, Compliant: compliance.Aggregate(s...), Policies: cells})
		}
		slices.SortFunc(h.Clusters, func(a, b FleetCluster) int { return cmp.Compare(a.Name, b.Name) })
		out = append(out, *h)
	}
	slices.SortFunc(out, func(a, b FleetHub) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// setFreshness sets how old h's data is at readAt.
func setFreshness(h *FleetHub, readAt time.Time, staleAfter time.Duration) {
	if h.LastWrite == nil {
		h.DataAge, h.Freshness = FreshnessUnknown, FreshnessUnknown
		h.Note = "the database holds nothing of this hub: it has recorded nothing yet, or records elsewhere"
		return
	}
	age := max(readAt.Sub(*h.LastWrite), 0).Truncate(time.Second)
	h.DataAgeSeconds, h.DataAge = ptr.To(int64(age.Seconds())), age.String()
	if age < staleAfter {
		h.Freshness = FreshnessRecent
		h.Note = "wrote " + age.String() + " ago"
		return
	}
	h.Freshness = FreshnessStale
	h.Note = "nothing written for " + age.String() + " (over " + staleAfter.String() +
		"): the hub may be down or cut off from the database, or nothing changed on its clusters; its states are as of their times"
}

// rollUp returns one row per policy (namespace/name) across hubs, by
// namespace and name.
func rollUp(hubs []FleetHub) []FleetPolicy {
	rows := map[history.Policy]*FleetPolicy{}
	for _, h := range hubs {
		for _, c := range h.Clusters {
			for _, cell := range c.Policies {
				p := rows[cell.Policy]
				if p == nil {
					p = &FleetPolicy{Namespace: cell.Policy.Namespace, Name: cell.Policy.Name, Hubs: []string{}}
					rows[cell.Policy] = p
				}
				countCluster(p, h, cell.Compliant)
			}
		}
	}
	out := make([]FleetPolicy, 0, len(rows))
	for _, p := range rows {
		p.Summary = fmt.Sprintf("%d/%d %s compliant across %s", p.CompliantClusters, p.Clusters, plural(p.Clusters, "cluster"), countOf(len(p.Hubs), "hub"))
		if others := otherStates(p); others != "" {
			p.Summary += " (" + others + ")"
		}
		if len(p.StaleHubs) > 0 {
			p.Summary += fmt.Sprintf("; the data of %s is stale", joinNames(p.StaleHubs))
		}
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b FleetPolicy) int {
		return comparePolicies(history.Policy{Namespace: a.Namespace, Name: a.Name}, history.Policy{Namespace: b.Namespace, Name: b.Name})
	})
	return out
}

// comparePolicies orders policies by namespace, then name.
func comparePolicies(a, b history.Policy) int {
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

// countCluster counts one cluster of hub h, of compliance c, in p; hubs
// come in name order.
func countCluster(p *FleetPolicy, h FleetHub, c policyv1.ComplianceState) {
	if !slices.Contains(p.Hubs, h.Name) {
		p.Hubs = append(p.Hubs, h.Name)
		if h.Freshness != FreshnessRecent {
			p.StaleHubs = append(p.StaleHubs, h.Name)
		}
	}
	if p.Clusters == 0 {
		p.Compliant = c
	} else {
		p.Compliant = compliance.Aggregate(p.Compliant, c)
	}
	p.Clusters++
	switch c {
	case policyv1.Compliant:
		p.CompliantClusters++
	case policyv1.NonCompliant:
		p.NonCompliantClusters++
	case policyv1.Pending:
		p.PendingClusters++
	}
}

// otherStates says how many clusters of p are NonCompliant, Pending and
// unknown: "1 NonCompliant, 1 Pending".
func otherStates(p *FleetPolicy) string {
	var parts []string
	unknown := p.Clusters - p.CompliantClusters - p.NonCompliantClusters - p.PendingClusters
	for _, c := range []struct {
		n     int
		state string
	}{{p.NonCompliantClusters, "NonCompliant"}, {p.PendingClusters, "Pending"}, {unknown, "unknown"}} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c.n, c.state))
		}
	}
	return strings.Join(parts, ", ")
}

// plural returns word, with an s unless n is 1.
func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// countOf returns "1 hub" or "3 hubs".
func countOf(n int, word string) string {
	return fmt.Sprintf("%d %s", n, plural(n, word))
}

// joinNames returns "a", "a and b" or "a, b and c".
func joinNames(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	out := names[0]
	for _, n := range names[1 : len(names)-1] {
		out += ", " + n
	}
	return out + " and " + names[len(names)-1]
}

// fleetView reads the database and builds the view.
func (s *Server) fleetView(ctx context.Context) (FleetView, error) {
	f, err := s.Fleet.read(ctx)
	if err != nil {
		return FleetView{}, err
	}
	return newFleetView(f, s.Fleet.hub, cmp.Or(s.Fleet.StaleAfter, DefaultFleetStaleAfter)), nil
}

// fleetAPI answers GET /api/fleet.
func (s *Server) fleetAPI(w http.ResponseWriter, r *http.Request) {
	view, ok := s.serveFleet(w, r)
	if ok {
		writeJSON(w, view)
	}
}

// fleetPage answers GET /fleet: the fleet view, drawn on the server and
// reloaded every fleetPageRefresh.
func (s *Server) fleetPage(w http.ResponseWriter, r *http.Request) {
	view, ok := s.serveFleet(w, r)
	if !ok {
		return
	}
	var buf bytes.Buffer
	if err := s.pages.ExecuteTemplate(&buf, "fleet.html", fleetPage{FleetView: view, RefreshSeconds: int(fleetPageRefresh.Seconds())}); err != nil {
		s.fail(w, fmt.Errorf("rendering fleet.html: %w", err))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = buf.WriteTo(w)
}

// fleetPage is what fleet.html gets.
type fleetPage struct {
	FleetView
	// RefreshSeconds is how often the page reloads.
	RefreshSeconds int
}

// serveFleet returns the fleet view, or answers the error and returns
// false.
func (s *Server) serveFleet(w http.ResponseWriter, r *http.Request) (FleetView, bool) {
	if s.Fleet == nil {
		http.Error(w, "this hub's dashboard does not show the fleet: start the hub with --fleet and a PostgreSQL --history-database shared by the hubs", http.StatusNotFound)
		return FleetView{}, false
	}
	view, err := s.fleetView(r.Context())
	if err != nil {
		s.log.Error(err, "Reading the fleet's compliance history failed")
		http.Error(w, "the dashboard could not read the fleet's history database; see the hub's log", http.StatusServiceUnavailable)
		return FleetView{}, false
	}
	return view, true
}
