package history_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	. "github.com/onsi/gomega"

	"github.com/canopy-policy/canopy/internal/test/postgres"
	"github.com/canopy-policy/canopy/pkg/history"
)

// TestFleet: two hubs record to one PostgreSQL and a third recorded only a
// gap; the fleet holds the newest state of every template of every replica
// of each hub (the worse one when two share a second), and when each hub
// last wrote, by the database's clock.
func TestFleet(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	url := postgres.Start(t).URL()
	writer, err := history.Open(ctx, url)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = writer.Close() })

	p1 := history.Policy{Namespace: "policies", Name: "baseline"}
	p2 := history.Policy{Namespace: "policies", Name: "quota"}
	t0 := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	at := func(hub, cluster string, p history.Policy, template, state string, at time.Time) history.Transition {
		return history.Transition{Hub: hub, Cluster: cluster, Policy: p, Template: template, State: state, Message: state, At: at}
	}
	_, err = writer.Write(ctx, []history.Transition{
		at("hub-a", "c1", p1, "cfg", "Pending", t0),
		at("hub-a", "c1", p1, "cfg", "Compliant", t0.Add(time.Minute)),
		at("hub-a", "c1", p1, "quota", "NonCompliant", t0.Add(time.Minute)),
		at("hub-a", "c2", p1, "cfg", "Compliant", t0.Add(2*time.Minute)),
		at("hub-a", "c2", p1, "cfg", "NonCompliant", t0.Add(2*time.Minute)), // the same second: the worse wins
		at("hub-b", "c1", p1, "cfg", "NonCompliant", t0),
		at("hub-b", "c1", p1, "cfg", "Compliant", t0.Add(26*time.Hour)), // another day: another partition
		at("hub-b", "c1", p2, "cfg", "Compliant", t0),
	}, []history.Gap{{Hub: "hub-c", Cluster: "c9", Policy: p1, Template: "cfg", From: t0, To: t0.Add(time.Hour)}})
	g.Expect(err).NotTo(HaveOccurred())

	fleet, err := history.OpenFleet(ctx, url)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = fleet.Close() })
	f, err := fleet.Fleet(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.States).To(Equal([]history.TemplateState{
		{Hub: "hub-a", Cluster: "c1", Policy: p1, Template: "cfg", State: "Compliant", At: t0.Add(time.Minute)},
		{Hub: "hub-a", Cluster: "c1", Policy: p1, Template: "quota", State: "NonCompliant", At: t0.Add(time.Minute)},
		{Hub: "hub-a", Cluster: "c2", Policy: p1, Template: "cfg", State: "NonCompliant", At: t0.Add(2 * time.Minute)},
		{Hub: "hub-b", Cluster: "c1", Policy: p1, Template: "cfg", State: "Compliant", At: t0.Add(26 * time.Hour)},
		{Hub: "hub-b", Cluster: "c1", Policy: p2, Template: "cfg", State: "Compliant", At: t0},
	}))
	g.Expect(f.Hubs).To(HaveLen(3))
	for _, h := range f.Hubs {
		g.Expect(f.ReadAt.Sub(h.LastWrite)).To(And(BeNumerically(">=", 0), BeNumerically("<", time.Minute)), "%s wrote just now", h.Hub)
	}
	g.Expect([]string{f.Hubs[0].Hub, f.Hubs[1].Hub, f.Hubs[2].Hub}).To(Equal([]string{"hub-a", "hub-b", "hub-c"}))
	g.Expect(f.Hubs[0].NewestEvent).To(Equal(t0.Add(2 * time.Minute)))
	g.Expect(f.Hubs[1].NewestEvent).To(Equal(t0.Add(26 * time.Hour)))
	g.Expect(f.Hubs[2].NewestEvent).To(BeZero(), "hub-c stored a gap only")

	By := "a hub that stopped writing three hours ago shows its last write then"
	backdate(t, url, "hub-b", 3*time.Hour)
	f, err = fleet.Fleet(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.Hubs[1].Hub).To(Equal("hub-b"))
	g.Expect(f.ReadAt.Sub(f.Hubs[1].LastWrite)).To(BeNumerically(">=", 3*time.Hour), By)
	g.Expect(f.ReadAt.Sub(f.Hubs[0].LastWrite)).To(BeNumerically("<", time.Hour), By)
}

// TestFleetNeedsPostgres: the fleet is read from PostgreSQL only; a SQLite
// file or no database is ErrFleetNeedsPostgres, before anything is opened.
func TestFleetNeedsPostgres(t *testing.T) {
	file := filepath.Join(t.TempDir(), "history.db")
	for _, url := range []string{file, "", "none"} {
		g := NewWithT(t)
		g.Expect(history.CheckFleet(url)).To(MatchError(history.ErrFleetNeedsPostgres), "%q", url)
		_, err := history.OpenFleet(t.Context(), url)
		g.Expect(errors.Is(err, history.ErrFleetNeedsPostgres)).To(BeTrue(), "%q: got %v", url, err)
		g.Expect(err.Error()).To(ContainSubstring("--history-database=postgres://"))
	}
	g := NewWithT(t)
	g.Expect(file).NotTo(BeAnExistingFile(), "nothing was created")
	g.Expect(history.CheckFleet("postgresql://canopy@db/history")).To(Succeed())
}

// backdate moves every row hub wrote back by d, as if it had written them
// then.
func backdate(t *testing.T, url, hub string, d time.Duration) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, table := range []string{"canopy_history_transitions", "canopy_history_gaps"} {
		if _, err := conn.Exec(t.Context(), `UPDATE `+table+` SET recorded_at = recorded_at - $1::interval WHERE hub = $2`, d.String(), hub); err != nil {
			t.Fatal(err)
		}
	}
}
