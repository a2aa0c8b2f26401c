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

// stores opens an empty store of each kind; the PostgreSQL one on a real
// server the test starts.
func stores(t *testing.T) map[string]func(t *testing.T) (history.Store, string) {
	return map[string]func(t *testing.T) (history.Store, string){
		"sqlite": func(t *testing.T) (history.Store, string) {
			url := filepath.Join(t.TempDir(), "sub", "history.db")
			return open(t, url), url
		},
		"postgres": func(t *testing.T) (history.Store, string) {
			url := postgres.Start(t).URL()
			return open(t, url), url
		},
	}
}

func open(t *testing.T, url string) history.Store {
	t.Helper()
	s, err := history.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

var (
	p1 = history.Policy{Namespace: "policies", Name: "p1"}
	p2 = history.Policy{Namespace: "policies", Name: "p2"}
	t0 = time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
)

func tr(cluster string, p history.Policy, state string, at time.Time) history.Transition {
	return history.Transition{Hub: "hub-a", Cluster: cluster, Policy: p, Template: "cfg", State: state, Message: "found " + state, At: at}
}

func TestStore(t *testing.T) {
	for name, openStore := range stores(t) {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := t.Context()
			s, url := openStore(t)
			batch := []history.Transition{
				tr("c1", p1, "Pending", t0),
				tr("c1", p1, "Compliant", t0.Add(time.Minute)),
				tr("c2", p1, "NonCompliant", t0.Add(25*time.Hour)), // the next day: another partition
				tr("c1", p2, "Compliant", t0.Add(2*time.Minute)),
			}
			n, err := s.Write(ctx, batch, nil)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(n).To(Equal(history.WriteResult{Transitions: 4}))

			By := "writing the same batch again writes nothing, also after reopening (a hub restart)"
			g.Expect(s.Close()).To(Succeed(), By)
			s = open(t, url)
			n, err = s.Write(ctx, append(batch, tr("c1", p1, "NonCompliant", t0.Add(3*time.Minute))), nil)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(n).To(Equal(history.WriteResult{Transitions: 1}), By)

			latest, err := s.Latest(ctx, "hub-a", "c1", p1)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(latest).To(Equal(map[string]time.Time{"cfg": t0.Add(3 * time.Minute)}))
			all, err := s.LatestAll(ctx, "hub-a")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(all).To(Equal(map[history.Replica]map[string]time.Time{
				{Cluster: "c1", Policy: p1}: {"cfg": t0.Add(3 * time.Minute)},
				{Cluster: "c2", Policy: p1}: {"cfg": t0.Add(25 * time.Hour)},
				{Cluster: "c1", Policy: p2}: {"cfg": t0.Add(2 * time.Minute)},
			}), "LatestAll is Latest of every replica, in one query")
			all, err = s.LatestAll(ctx, "hub-b")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(all).To(BeEmpty(), "another hub's")

			gap := history.Gap{Hub: "hub-a", Cluster: "c2", Policy: p1, Template: "cfg", From: t0, To: t0.Add(25 * time.Hour)}
			n, err = s.Write(ctx, nil, []history.Gap{gap, gap})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(n).To(Equal(history.WriteResult{Gaps: 1}))

			res, err := s.Query(ctx, history.Query{Policies: []history.Policy{p1}})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Transitions).To(HaveLen(4))
			g.Expect(res.Transitions[0]).To(Equal(batch[0]))
			g.Expect(res.Transitions[3]).To(Equal(batch[2]))
			g.Expect(res.Gaps).To(Equal([]history.Gap{gap}))

			res, err = s.Query(ctx, history.Query{Cluster: "c1", Since: t0.Add(90 * time.Second)})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Transitions).To(HaveLen(2)) // p2's and p1's last
			g.Expect(res.Gaps).To(BeEmpty())

			res, err = s.Query(ctx, history.Query{Policies: []history.Policy{p1, p2}, Limit: 2})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Transitions).To(HaveLen(2))
			g.Expect(res.Transitions[1].At).To(Equal(t0.Add(25 * time.Hour)))

			By = "retention keeps the second day and drops the first"
			dropped, err := s.Prune(ctx, t0.Add(24*time.Hour))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(dropped).To(BeNumerically(">", 0), By)
			res, err = s.Query(ctx, history.Query{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Transitions).To(HaveLen(1), By)
			g.Expect(res.Transitions[0].Cluster).To(Equal("c2"), By)
			g.Expect(res.Gaps).To(HaveLen(1), "the gap ends on the second day")

			By = "a transition of a dropped day can be written again"
			n, err = s.Write(ctx, batch[:1], nil)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(n).To(Equal(history.WriteResult{Transitions: 1}), By)
		})
	}
}

// TestPostgresPartitions checks that the transitions table is partitioned
// by day and that retention drops whole partitions.
func TestPostgresPartitions(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	pg := postgres.Start(t)
	s := open(t, pg.URL())
	_, err := s.Write(ctx, []history.Transition{
		tr("c1", p1, "Pending", t0), tr("c1", p1, "Compliant", t0.Add(24*time.Hour)), tr("c1", p1, "NonCompliant", t0.Add(48*time.Hour)),
	}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(partitions(t, pg.URL())).To(Equal([]string{
		"canopy_history_transitions_p20261120", "canopy_history_transitions_p20261121", "canopy_history_transitions_p20261122",
	}))
	dropped, err := s.Prune(ctx, t0.Add(36*time.Hour))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(dropped).To(Equal(1), "the 21st still holds an hour to keep")
	g.Expect(partitions(t, pg.URL())).To(Equal([]string{"canopy_history_transitions_p20261121", "canopy_history_transitions_p20261122"}))
}

// TestPostgresPartitionDroppedElsewhere: a store whose partition another
// hub's retention dropped writes that day again.
func TestPostgresPartitionDroppedElsewhere(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	pg := postgres.Start(t)
	a, b := open(t, pg.URL()), open(t, pg.URL())
	_, err := a.Write(ctx, []history.Transition{tr("c1", p1, "Pending", t0)}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = b.Prune(ctx, t0.Add(48*time.Hour))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(partitions(t, pg.URL())).To(BeEmpty())
	n, err := a.Write(ctx, []history.Transition{tr("c1", p1, "Compliant", t0.Add(time.Minute))}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n.Transitions).To(Equal(1))
}

func partitions(t *testing.T, url string) []string {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, _ := conn.Query(t.Context(), `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = 'canopy_history_transitions' ORDER BY 1`)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestSchemaVersion checks that a database of another schema version is a
// clear error at Open, on both stores.
func TestSchemaVersion(t *testing.T) {
	for name, openStore := range stores(t) {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			s, url := openStore(t)
			g.Expect(s.Close()).To(Succeed())
			bump(t, url)
			_, err := history.Open(t.Context(), url)
			g.Expect(errors.Is(err, history.ErrSchemaVersion)).To(BeTrue(), "got %v", err)
			g.Expect(err.Error()).To(ContainSubstring("version 2, this hub reads and writes version 1"))
		})
	}
}

// TestBadURL checks that a malformed PostgreSQL URL is an error that does
// not quote the URL (it may hold a password).
func TestBadURL(t *testing.T) {
	g := NewWithT(t)
	_, err := history.Open(t.Context(), "postgres://user:s3cret@host:notaport/db")
	g.Expect(errors.Is(err, history.ErrBadURL)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).NotTo(ContainSubstring("s3cret"))
}
