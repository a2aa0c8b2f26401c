package history_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	. "github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/internal/test/postgres"
	"github.com/canopy-policy/canopy/pkg/history"
	"github.com/canopy-policy/canopy/pkg/hub"
	hubhistory "github.com/canopy-policy/canopy/pkg/hub/history"
)

// TestRecordsOnceAcrossRestart: every event of a replica's history is
// stored once, also when a restarted hub reads the same history again and
// then more.
func TestRecordsOnceAcrossRestart(t *testing.T) {
	for name, database := range databases() {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			url, _ := database(t)
			a := newReplica(t, "restart")
			a.report(3)
			stop := runRecorder(t, url, "hub-a")
			g.Eventually(stored(t, url, a)).Should(WithTransform(transitions, Equal(a.want("hub-a", 0, 3))))
			stop()

			a.report(2)
			runRecorder(t, url, "hub-a")
			g.Eventually(stored(t, url, a)).Should(WithTransform(transitions, Equal(a.want("hub-a", 0, 5))))
			a.report(1)
			g.Eventually(stored(t, url, a)).Should(WithTransform(transitions, Equal(a.want("hub-a", 0, 6))))
			g.Consistently(stored(t, url, a), 2*time.Second).Should(And(
				WithTransform(transitions, HaveLen(6)), WithTransform(gaps, BeEmpty())))
		})
	}
}

// TestOutageCatchUp: PostgreSQL is down for 30 seconds while the replica's
// compliance changes (fewer times than its history holds); when it is back
// every change is stored and no gap is.
func TestOutageCatchUp(t *testing.T) {
	g := NewWithT(t)
	pg := postgres.Start(t)
	url := pg.URL()
	a := newReplica(t, "outage")
	a.report(2)
	runRecorder(t, url, "hub-a")
	g.Eventually(stored(t, url, a)).Should(WithTransform(transitions, Equal(a.want("hub-a", 0, 2))))

	pg.Stop()
	for range 3 {
		a.report(2)
		time.Sleep(10 * time.Second)
	}
	pg.Restart()
	g.Eventually(stored(t, url, a)).Should(WithTransform(transitions, Equal(a.want("hub-a", 0, 8))))
	g.Consistently(stored(t, url, a), 2*time.Second).Should(WithTransform(gaps, BeEmpty()))
}

// TestOverflowGap: while the database is down the replica's compliance
// changes more often than its history holds; when it is back the history
// still held is stored and the rest is an explicit gap, from the newest
// event stored before to the oldest the history still held.
func TestOverflowGap(t *testing.T) {
	g := NewWithT(t)
	pg := postgres.Start(t)
	url := pg.URL()
	a := newReplica(t, "overflow")
	a.report(2)
	runRecorder(t, url, "hub-a")
	g.Eventually(stored(t, url, a)).Should(WithTransform(transitions, Equal(a.want("hub-a", 0, 2))))

	pg.Stop()
	a.report(15) // events 2..16; the history holds 7..16
	time.Sleep(2 * time.Second)
	pg.Restart()
	want := append(a.want("hub-a", 0, 2), a.want("hub-a", 7, 17)...)
	g.Eventually(stored(t, url, a)).Should(WithTransform(transitions, Equal(want)))
	g.Expect(stored(t, url, a)()).To(WithTransform(gaps, Equal([]history.Gap{{
		Hub: "hub-a", Cluster: a.replica.Namespace, Policy: history.Policy{Namespace: "policies", Name: "overflow"},
		Template: "cfg", From: base.Add(time.Minute), To: base.Add(7 * time.Minute),
	}})))
}

// TestDatabaseDownAtStart: a hub whose PostgreSQL does not answer at start
// starts anyway and records the history once the database answers.
func TestDatabaseDownAtStart(t *testing.T) {
	g := NewWithT(t)
	pg := postgres.Start(t)
	url := pg.URL()
	pg.Stop()
	a := newReplica(t, "down-at-start")
	a.report(3)
	runRecorder(t, url, "hub-a")
	time.Sleep(2 * time.Second)
	pg.Restart()
	g.Eventually(stored(t, url, a)).Should(WithTransform(transitions, Equal(a.want("hub-a", 0, 3))))
}

// TestWrongSchemaVersion: a database of another schema version is an error
// when the recorder is set up, so the hub does not start on it.
func TestWrongSchemaVersion(t *testing.T) {
	g := NewWithT(t)
	pg := postgres.Start(t)
	s, err := history.Open(t.Context(), pg.URL())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.Close()).To(Succeed())
	conn, err := pgx.Connect(t.Context(), pg.URL())
	g.Expect(err).NotTo(HaveOccurred())
	_, err = conn.Exec(t.Context(), `UPDATE canopy_history_schema SET version = 7`)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(conn.Close(t.Context())).To(Succeed())

	cp := suite.Get(t)
	_, err = controlplane.StartManager(cp.Config, hub.ManagerOptions(hub.Options{}), func(mgr ctrl.Manager) error {
		return (&hubhistory.Recorder{Database: pg.URL()}).SetupWithManager(t.Context(), mgr)
	})
	g.Expect(err).To(MatchError(ContainSubstring("the database is at version 7, this hub reads and writes version 1")))
}
