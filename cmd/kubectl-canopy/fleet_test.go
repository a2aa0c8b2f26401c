package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/cmdtest"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/internal/test/postgres"
	"github.com/canopy-policy/canopy/pkg/historyview"
	"github.com/canopy-policy/canopy/pkg/hub"
	"github.com/canopy-policy/canopy/pkg/hub/dashboard"
	hubhistory "github.com/canopy-policy/canopy/pkg/hub/history"
)

// testHub is one hub of TestFleet: its API server and its two clusters,
// the first of which every hub calls local-cluster, as OCM does.
type testHub struct {
	name     string
	cp       *controlplane.ControlPlane
	clusters [2]string
}

// TestFleet runs three hubs, each its own API server with the hub's history
// recorder and two clusters, recording to one real PostgreSQL; hub-a's
// dashboard runs with the fleet view. The propagator does not run (it would
// delete the test's replicas, whose roots are placed on no cluster): the
// replicas and their status are written as the propagator and the agents
// write them. `kubectl canopy status --fleet` and /api/fleet list the six
// clusters grouped by hub, with each hub's data age, and the policy every
// hub applies as one row; a hub that stops writing shows as stale.
func TestFleet(t *testing.T) {
	controlplane.SetTestLogger()
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(2 * time.Minute)
	g.SetDefaultEventuallyPollingInterval(500 * time.Millisecond)
	pg := postgres.Start(t)
	hubs := startFleetHubs(t, "hub-a", "hub-b", "hub-c")

	address := cmdtest.FreeAddress(t)
	for _, h := range hubs {
		opts := hub.Options{HistoryDatabase: pg.URL(), HubName: h.name}
		if h.name == "hub-a" {
			opts.DashboardAddress, opts.Fleet = address, true
		}
		stop, err := controlplane.StartManager(h.cp.Config, hub.ManagerOptions(opts), func(mgr ctrl.Manager) error {
			recorder := &hubhistory.Recorder{Database: opts.HistoryDatabase, HubName: opts.HubName}
			err := recorder.SetupWithManager(context.Background(), mgr)
			if opts.Fleet {
				g.Expect(dashboard.CheckFleet(opts.DashboardAddress, opts.HistoryDatabase)).To(Succeed())
				server := &dashboard.Server{Address: opts.DashboardAddress, Fleet: dashboard.NewFleetReader(opts.HistoryDatabase, opts.HubName)}
				err = errors.Join(err, server.SetupWithManager(context.Background(), mgr))
			}
			return err
		})
		g.Expect(err).NotTo(HaveOccurred())
		t.Cleanup(func() { g.Expect(stop()).To(Succeed()) })
	}

	t0 := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	for _, h := range hubs {
		for i, cluster := range h.clusters {
			state := policyv1.Compliant
			if h.name == "hub-c" && i == 1 {
				state = policyv1.NonCompliant
			}
			writeReplica(t, h.cp.Client, cluster, "baseline", t0, state)
		}
	}
	writeReplica(t, hubs[1].cp.Client, hubs[1].clusters[1], "quota", t0, policyv1.Pending)

	base := "http://" + address
	var answer historyview.FleetView
	var out string
	g.Eventually(func(g Gomega) {
		var err error
		out, err = runFleet(t, hubs[0].cp, "--dashboard", base, "-o", "json")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(json.Unmarshal([]byte(out), &answer)).To(Succeed())
		g.Expect(answer.Policies).To(HaveLen(2))
		g.Expect(answer.Policies[0].Clusters).To(Equal(6))
		g.Expect(answer.Policies[1].Clusters).To(Equal(1))
	}).Should(Succeed())
	t.Logf("kubectl canopy status --fleet -o json:\n%s", out)

	By := "six clusters, grouped by hub, each hub's data recent and its age given"
	g.Expect(answer.Hub).To(Equal("hub-a"))
	g.Expect(answer.Hubs).To(HaveLen(3))
	for i, h := range answer.Hubs {
		g.Expect(h.Name).To(Equal(hubs[i].name), By)
		g.Expect(h.Freshness).To(Equal("recent"), By)
		g.Expect(h.DataAgeSeconds).NotTo(BeNil(), By)
		g.Expect(h.LastWrite).NotTo(BeNil(), By)
		g.Expect(*h.DataAgeSeconds).To(Equal(int64(answer.ReadAt.Sub(*h.LastWrite).Seconds())), By)
		g.Expect(h.Clusters).To(HaveLen(2), By)
		g.Expect([]string{h.Clusters[0].Name, h.Clusters[1].Name}).To(ConsistOf(hubs[i].clusters[0], hubs[i].clusters[1]), By)
	}
	g.Expect(answer.Hubs[1].Clusters[1].Compliant).To(Equal(policyv1.Pending), "hub-b's second cluster has quota Pending")
	g.Expect(answer.Hubs[2].Clusters[1].Compliant).To(Equal(policyv1.NonCompliant))

	By = "the policy every hub applies is one row"
	g.Expect(answer.Policies[0]).To(Equal(historyview.FleetPolicy{
		Namespace: "policies", Name: "baseline", Compliant: "NonCompliant", Hubs: []string{"hub-a", "hub-b", "hub-c"},
		Clusters: 6, CompliantClusters: 5, NonCompliantClusters: 1,
		Summary: "5/6 clusters compliant across 3 hubs (1 NonCompliant)",
	}), By)
	g.Expect(answer.Policies[1].Summary).To(Equal("0/1 cluster compliant across 1 hub (1 Pending)"))

	By = "the dashboard's API and page say the same"
	var api historyview.FleetView
	g.Expect(getBody(base+"/api/fleet", &api)).To(Succeed())
	g.Expect(api.Policies).To(Equal(answer.Policies), By)
	var page bytes.Buffer
	g.Expect(getBody(base+"/fleet", &page)).To(Succeed())
	for _, h := range hubs {
		g.Expect(page.String()).To(ContainSubstring(`<section id="hub-%s" data-hub="%s">`, h.name, h.name), By)
		g.Expect(page.String()).To(ContainSubstring(`data-cluster="%s" data-policy="policies/baseline"`, h.clusters[1]), By)
	}
	g.Expect(page.String()).To(ContainSubstring("5/6 clusters compliant across 3 hubs (1 NonCompliant)"), By)

	out, err := runFleet(t, hubs[0].cp, "--dashboard", base)
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("kubectl canopy status --fleet:\n%s", out)
	g.Expect(out).To(ContainSubstring("Fleet of 3 hubs and 6 clusters"))
	g.Expect(out).To(MatchRegexp(`policies/baseline\s+NonCompliant\s+5/6 clusters compliant across 3 hubs \(1 NonCompliant\)`))
	for _, h := range hubs {
		g.Expect(out).To(MatchRegexp(`\n%s \(recent, last write [0-9hms]+ ago\)\n`, h.name))
		g.Expect(out).To(MatchRegexp(`\n  %s\s+policies/baseline\s+`, h.clusters[1]))
	}

	By = "a hub that has not written for over an hour shows as stale, in the hub list and in the policy's row"
	backdateHub(t, pg.URL(), "hub-c", 2*time.Hour)
	out, err = runFleet(t, hubs[0].cp, "--dashboard", base)
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("kubectl canopy status --fleet, hub-c silent for two hours:\n%s", out)
	g.Expect(out).To(MatchRegexp(`\nhub-c\s+stale, 2h\d+m\d+s old\s+`), By)
	g.Expect(out).To(ContainSubstring("5/6 clusters compliant across 3 hubs (1 NonCompliant); the data of hub-c is stale"), By)
	g.Expect(out).To(ContainSubstring("\nhub-c (stale, last write 2h"), By)
}

// startFleetHubs starts one API server per name, at once, each with two
// cluster namespaces; the test's end stops them.
func startFleetHubs(t *testing.T, names ...string) []testHub {
	t.Helper()
	hubs := make([]testHub, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		hubs[i] = testHub{name: name, clusters: [2]string{"local-cluster", "prod-" + name[len(name)-1:]}}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(t.Context(), 2*controlplane.StartBudget)
			defer cancel()
			hubs[i].cp, errs[i] = controlplane.Start(ctx, name)
		})
	}
	wg.Wait()
	for i := range hubs {
		if cp := hubs[i].cp; cp != nil {
			t.Cleanup(func() {
				if err := cp.Stop(); err != nil {
					t.Errorf("stopping %s: %v", hubs[i].name, err)
				}
			})
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("starting the hubs: %v", err)
	}
	for _, h := range hubs {
		for _, cluster := range h.clusters {
			createNamespace(t, h.cp.Client, cluster)
		}
	}
	return hubs
}

// writeReplica creates the replica of policies/<root> in cluster's
// namespace, as the propagator does, and reports one Pending then one
// transition to state on it, as the agent does.
func writeReplica(t *testing.T, c client.Client, cluster, root string, t0 time.Time, state policyv1.ComplianceState) {
	t.Helper()
	ctx := t.Context()
	replica := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: "policies." + root, Labels: map[string]string{
		policyv1.RootPolicyLabel: "policies." + root, policyv1.ClusterNameLabel: cluster, policyv1.ClusterNamespaceLabel: cluster,
	}}, Spec: policyv1.PolicySpec{PolicyTemplates: []policyv1.PolicyTemplate{}}}
	if err := c.Create(ctx, replica); err != nil {
		t.Fatal(err)
	}
	replica.Status.Details = []policyv1.DetailsPerTemplate{{TemplateMeta: metav1.ObjectMeta{Name: root + "-cfg"}, ComplianceState: state,
		History: []policyv1.ComplianceHistory{
			{LastTimestamp: metav1.NewTime(t0.Add(time.Minute)), Message: string(state) + "; as the test says", EventName: "e2"},
			{LastTimestamp: metav1.NewTime(t0), Message: "Pending; Dependencies were not satisfied: 1 is still pending (Policy other)", EventName: "e1"},
		}}}
	replica.Status.ComplianceState = state
	if err := c.Status().Update(ctx, replica); err != nil {
		t.Fatal(err)
	}
}

// backdateHub moves every row hub wrote to the database at url back by d,
// as if the hub had stopped writing then.
func backdateHub(t *testing.T, url, hub string, d time.Duration) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), `UPDATE canopy_history_transitions SET recorded_at = recorded_at - $1::interval WHERE hub = $2`, d.String(), hub); err != nil {
		t.Fatal(err)
	}
}

// getBody reads url into into: JSON decoded, or the bytes into a
// *bytes.Buffer.
func getBody(url string, into any) error {
	resp, err := http.Get(url) //nolint:gosec,noctx // the test's own dashboard
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", resp.Status, body)
	}
	if buf, ok := into.(*bytes.Buffer); ok {
		_, err = buf.Write(body)
		return err
	}
	return json.Unmarshal(body, into)
}

func runFleet(t *testing.T, cp *controlplane.ControlPlane, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	root := newRootCommand(&out, &out)
	root.SetArgs(append([]string{"--kubeconfig", cp.KubeconfigPath, "status", "--fleet"}, args...))
	err := root.ExecuteContext(t.Context())
	return out.String(), err
}
