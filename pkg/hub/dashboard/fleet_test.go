package dashboard

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/history"
)

func TestNewFleetView(t *testing.T) {
	readAt := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	asOf := readAt.Add(-2 * time.Hour)
	base := history.Policy{Namespace: "policies", Name: "baseline"}
	quota := history.Policy{Namespace: "policies", Name: "quota"}
	st := func(hub, cluster string, p history.Policy, template, state string) history.TemplateState {
		return history.TemplateState{Hub: hub, Cluster: cluster, Policy: p, Template: template, State: state, At: asOf}
	}
	f := history.Fleet{
		ReadAt: readAt,
		Hubs: []history.HubActivity{
			{Hub: "east", LastWrite: readAt.Add(-90 * time.Second), NewestEvent: asOf},
			{Hub: "west", LastWrite: readAt.Add(-3 * time.Hour), NewestEvent: asOf},
		},
		States: []history.TemplateState{
			st("east", "local-cluster", base, "cfg", "Compliant"),
			st("east", "local-cluster", base, "quota-cfg", "Pending"), // one template Pending: the policy is
			st("east", "local-cluster", quota, "cfg", "Compliant"),
			st("east", "prod-1", base, "cfg", "Compliant"),
			st("west", "local-cluster", base, "cfg", "Compliant"), // the same name on another hub: another cluster
			st("west", "prod-2", base, "cfg", "NonCompliant"),
		},
	}
	f.States[4].At = asOf.Add(time.Minute)
	v := newFleetView(f, "central", time.Hour)

	g := NewWithT(t)
	g.Expect(v.Hub).To(Equal("central"))
	g.Expect(v.ReadAt).To(Equal(readAt))
	g.Expect(v.StaleAfter).To(Equal("1h0m0s"))
	g.Expect(v.Hubs).To(HaveLen(3))

	By := "the serving hub, of which the database holds nothing, is listed as unknown, never as recent"
	central := v.Hubs[0]
	g.Expect(central.Name).To(Equal("central"))
	g.Expect(central.Freshness).To(Equal(FreshnessUnknown), By)
	g.Expect(central.DataAge).To(Equal("unknown"), By)
	g.Expect(central.LastWrite).To(BeNil(), By)
	g.Expect(central.DataAgeSeconds).To(BeNil(), By)
	g.Expect(central.Clusters).To(BeEmpty(), By)

	east := v.Hubs[1]
	g.Expect(east.Name).To(Equal("east"))
	g.Expect(east.Freshness).To(Equal(FreshnessRecent))
	g.Expect(east.DataAge).To(Equal("1m30s"))
	g.Expect(east.DataAgeSeconds).To(Equal(ptr.To(int64(90))))
	g.Expect(east.Note).To(Equal("wrote 1m30s ago"))
	g.Expect(east.Clusters).To(Equal([]FleetCluster{
		{Name: "local-cluster", Compliant: policyv1.Pending, Policies: []FleetCell{
			{Policy: base, Compliant: policyv1.Pending, AsOf: asOf},
			{Policy: quota, Compliant: policyv1.Compliant, AsOf: asOf},
		}},
		{Name: "prod-1", Compliant: policyv1.Compliant, Policies: []FleetCell{{Policy: base, Compliant: policyv1.Compliant, AsOf: asOf}}},
	}))

	By = "a hub silent for longer than StaleAfter is stale, and says what that may mean"
	west := v.Hubs[2]
	g.Expect(west.Freshness).To(Equal(FreshnessStale), By)
	g.Expect(west.DataAge).To(Equal("3h0m0s"), By)
	g.Expect(west.Note).To(ContainSubstring("nothing written for 3h0m0s (over 1h0m0s): the hub may be down"), By)
	g.Expect(west.Clusters).To(HaveLen(2))
	g.Expect(west.Clusters[0].Policies[0].AsOf).To(Equal(asOf.Add(time.Minute)), "as of its newest template")

	By = "one row per policy across hubs, a cluster being one per hub"
	g.Expect(v.Policies).To(Equal([]FleetPolicy{
		{
			Namespace: "policies", Name: "baseline", Compliant: policyv1.NonCompliant,
			Hubs: []string{"east", "west"}, StaleHubs: []string{"west"},
			Clusters: 4, CompliantClusters: 2, NonCompliantClusters: 1, PendingClusters: 1,
			Summary: "2/4 clusters compliant across 2 hubs (1 NonCompliant, 1 Pending); the data of west is stale",
		},
		{
			Namespace: "policies", Name: "quota", Compliant: policyv1.Compliant, Hubs: []string{"east"},
			Clusters: 1, CompliantClusters: 1, Summary: "1/1 cluster compliant across 1 hub",
		},
	}), By)

	By = "the view does not depend on the order the database returns rows in"
	slices.Reverse(f.States)
	slices.Reverse(f.Hubs)
	g.Expect(newFleetView(f, "central", time.Hour)).To(Equal(v), By)
}

func TestNewFleetViewEmpty(t *testing.T) {
	g := NewWithT(t)
	v := newFleetView(history.Fleet{ReadAt: time.Now()}, "hub", DefaultFleetStaleAfter)
	g.Expect(v.Policies).To(BeEmpty())
	g.Expect(v.Policies).NotTo(BeNil(), "JSON [] rather than null")
	g.Expect(v.Hubs).To(HaveLen(1))
	g.Expect(v.Hubs[0].Freshness).To(Equal(FreshnessUnknown))
}

func TestCheckFleet(t *testing.T) {
	g := NewWithT(t)
	g.Expect(CheckFleet("", "postgres://canopy@db/history")).To(MatchError(ErrFleetNeedsDashboard))
	g.Expect(CheckFleet("127.0.0.1:8090", "/var/lib/canopy/history.db")).To(MatchError(history.ErrFleetNeedsPostgres))
	g.Expect(CheckFleet("127.0.0.1:8090", "")).To(MatchError(history.ErrFleetNeedsPostgres))
	g.Expect(CheckFleet("127.0.0.1:8090", "postgres://canopy@db/history")).To(Succeed())
}

// TestFleetWithoutFleet: a dashboard started without --fleet answers 404
// with what to do; one whose database does not answer, 503.
func TestFleetWithoutFleet(t *testing.T) {
	get := func(path string) *http.Request {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Host = "localhost:8090"
		return req
	}
	for _, path := range []string{"/fleet", "/api/fleet"} {
		g := NewWithT(t)
		h, err := (&Server{}).Handler()
		g.Expect(err).NotTo(HaveOccurred())
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, get(path))
		g.Expect(rec.Code).To(Equal(http.StatusNotFound), path)
		g.Expect(rec.Body.String()).To(ContainSubstring("start the hub with --fleet"), path)

		s := &Server{Fleet: NewFleetReader("postgres://canopy@127.0.0.1:1/none?connect_timeout=1", "hub")}
		h, err = s.Handler()
		g.Expect(err).NotTo(HaveOccurred())
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, get(path))
		g.Expect(rec.Code).To(Equal(http.StatusServiceUnavailable), path)
		g.Expect(rec.Body.String()).NotTo(ContainSubstring("127.0.0.1:1"), "no database address in the answer")
	}
}
