package history_test

import (
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/canopy-policy/canopy/internal/test/postgres"
	"github.com/canopy-policy/canopy/pkg/history"
	hubhistory "github.com/canopy-policy/canopy/pkg/hub/history"
)

// TestRecordsOnceAcrossRestart: every event of a replica's history is
// stored once, also when a restarted hub reads the same history again and
// then more.
func TestRecordsOnceAcrossRestart(t *testing.T) {
	for name, database := range databases() {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			url := database(t).url
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

// TestOutageCatchUp: the database is down while the replica's compliance
// changes (fewer times than its history holds); the hub's Deployment says
// so with a condition and an Event; when the database is back every change
// is stored, no gap is, and the condition and an Event say so.
// The outage lasts 30 s, changes spread over it: the recorder probes the
// database every controllerdefaults.MaxHubRetryDelay (5 s) meanwhile.
func TestOutageCatchUp(t *testing.T) {
	for name, database := range databases() {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			db := database(t)
			deployment := hubDeployment(t)
			a := newReplica(t, "outage")
			a.report(2)
			runRecorder(t, db.url, "hub-a", recorderOptions{deployment: deployment})
			g.Eventually(stored(t, db.url, a)).Should(WithTransform(transitions, Equal(a.want("hub-a", 0, 2))))
			g.Eventually(recording(t, deployment)).Should(And(
				HaveField("Status", corev1.ConditionTrue), HaveField("Reason", hubhistory.ReasonRecording)))

			db.down()
			for range 3 { // Note: 6 changes, fewer than the history holds
				a.report(2)
				time.Sleep(10 * time.Second)
			}
			g.Eventually(recording(t, deployment)).Should(And(
				HaveField("Status", corev1.ConditionFalse), HaveField("Reason", hubhistory.ReasonDatabaseError),
				HaveField("Message", ContainSubstring("Compliance history is not being recorded"))))
			g.Eventually(eventReasons(t, deployment)).Should(Equal([]string{"Warning DatabaseError"}))

			db.up()
			g.Eventually(stored(t, db.url, a)).Should(WithTransform(transitions, Equal(a.want("hub-a", 0, 8))))
			g.Consistently(stored(t, db.url, a), 2*time.Second).Should(WithTransform(gaps, BeEmpty()))
			g.Eventually(recording(t, deployment)).Should(And(
				HaveField("Status", corev1.ConditionTrue), HaveField("Reason", hubhistory.ReasonRecording)))
			g.Eventually(eventReasons(t, deployment)).Should(Equal([]string{"Warning DatabaseError", "Normal Recording"}))
		})
	}
}

// TestOverflowGap: while the database is down the replica's compliance
// changes more often than its history holds; when it is back the history
// still held is stored and the rest is an explicit gap, from the newest
// event stored before to the oldest the history still held.
func TestOverflowGap(t *testing.T) {
	for name, database := range databases() {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			db := database(t)
			a := newReplica(t, "overflow")
			a.report(2)
			runRecorder(t, db.url, "hub-a")
			g.Eventually(stored(t, db.url, a)).Should(WithTransform(transitions, Equal(a.want("hub-a", 0, 2))))

			db.down()
			a.report(15) // events 2..16; the history holds 7..16
			time.Sleep(2 * time.Second)
			db.up()
			want := append(a.want("hub-a", 0, 2), a.want("hub-a", 7, 17)...)
			g.Eventually(stored(t, db.url, a)).Should(WithTransform(transitions, Equal(want)))
			g.Expect(stored(t, db.url, a)()).To(WithTransform(gaps, Equal([]history.Gap{{
				Hub: "hub-a", Cluster: a.replica.Namespace, Policy: history.Policy{Namespace: "policies", Name: "overflow"},
				Template: "cfg", From: base.Add(time.Minute), To: base.Add(7 * time.Minute),
			}})))
		})
	}
}

// TestDeletedDuringOutage: a replica whose compliance changed while the
// database was down, and that was deleted before it came back, still has
// every change the hub read stored once the database is back.
func TestDeletedDuringOutage(t *testing.T) {
	for name, database := range databases() {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			db := database(t)
			deployment := hubDeployment(t)
			a := newReplica(t, "deleted")
			a.report(2)
			runRecorder(t, db.url, "hub-a", recorderOptions{deployment: deployment})
			g.Eventually(stored(t, db.url, a)).Should(WithTransform(transitions, Equal(a.want("hub-a", 0, 2))))

			db.down()
			a.report(3)
			// The condition turns False once the recorder, having read the
			// replica, failed to write its changes.
			g.Eventually(recording(t, deployment)).Should(HaveField("Status", corev1.ConditionFalse))
			g.Expect(a.c.Delete(t.Context(), a.replica)).To(Succeed())
			db.up()
			g.Eventually(stored(t, db.url, a)).Should(WithTransform(transitions, Equal(a.want("hub-a", 0, 5))))
			g.Consistently(stored(t, db.url, a), 2*time.Second).Should(WithTransform(gaps, BeEmpty()))
		})
	}
}

// TestDatabaseDownAtStart: a hub whose PostgreSQL does not answer at start
// starts anyway and records the history once the database answers.
func TestDatabaseDownAtStart(t *testing.T) {
	g := NewWithT(t)
	pg := postgres.Start(t)
	url := pg.URL()
	pg.Stop()
	deployment := hubDeployment(t)
	a := newReplica(t, "down-at-start")
	a.report(3)
	runRecorder(t, url, "hub-a", recorderOptions{deployment: deployment})
	g.Eventually(recording(t, deployment)).Should(And(
		HaveField("Status", corev1.ConditionFalse), HaveField("Reason", hubhistory.ReasonDatabaseError)))
	pg.Restart()
	g.Eventually(stored(t, url, a)).Should(WithTransform(transitions, Equal(a.want("hub-a", 0, 3))))
	g.Eventually(recording(t, deployment)).Should(HaveField("Status", corev1.ConditionTrue))
}

// TestWrongSchemaVersion: a database of another schema version does not
// stop the hub: the recorder says so on the hub's Deployment, with an
// Event, and records nothing.
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

	deployment := hubDeployment(t)
	runRecorder(t, pg.URL(), "hub-a", recorderOptions{deployment: deployment})
	g.Eventually(recording(t, deployment)).Should(And(
		HaveField("Status", corev1.ConditionFalse),
		HaveField("Reason", hubhistory.ReasonSchemaVersionMismatch),
		HaveField("Message", ContainSubstring("the database is at version 7, this hub reads and writes version 1"))))
	g.Eventually(eventReasons(t, deployment)).Should(Equal([]string{"Warning SchemaVersionMismatch"}))
}

// TestBadURL: a malformed PostgreSQL URL does not stop the hub either; the
// condition says so without quoting the URL, which may hold a password.
func TestBadURL(t *testing.T) {
	g := NewWithT(t)
	deployment := hubDeployment(t)
	runRecorder(t, "postgres://user:s3cret@host:notaport/db", "hub-a", recorderOptions{deployment: deployment})
	g.Eventually(recording(t, deployment)).Should(And(
		HaveField("Status", corev1.ConditionFalse), HaveField("Reason", hubhistory.ReasonInvalidDatabaseURL)))
	c, err := recording(t, deployment)()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Message).NotTo(ContainSubstring("s3cret"))
	g.Expect(c.Message).To(ContainSubstring("--history-database is not a valid PostgreSQL URL"))
}

// TestRetention: a starting recorder deletes what is older than its
// retention (on PostgreSQL by dropping the day's partition) and keeps the
// rest.
func TestRetention(t *testing.T) {
	for name, database := range databases() {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			url := database(t).url
			now := time.Now().UTC().Truncate(time.Second) // PostgreSQL keeps microseconds
			old := history.Transition{Hub: "hub-a", Cluster: "c1", Policy: history.Policy{Namespace: "policies", Name: "p"},
				Template: "cfg", State: "NonCompliant", Message: "old", At: now.Add(-72 * time.Hour)}
			recent := old
			recent.State, recent.Message, recent.At = "Compliant", "recent", now.Add(-time.Hour)
			s, err := history.Open(t.Context(), url)
			g.Expect(err).NotTo(HaveOccurred())
			_, err = s.Write(t.Context(), []history.Transition{old, recent}, nil)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(s.Close()).To(Succeed())

			runRecorder(t, url, "hub-a", recorderOptions{retention: 48 * time.Hour})
			g.Eventually(func() ([]history.Transition, error) {
				s, err := history.Open(t.Context(), url)
				if err != nil {
					return nil, err
				}
				defer s.Close()
				res, err := s.Query(t.Context(), history.Query{Cluster: old.Cluster, Policies: []history.Policy{old.Policy}})
				return res.Transitions, err
			}).Should(Equal([]history.Transition{recent}))
			if name == "postgres" { // Note: other tests' replicas on the suite's hub may fill other days' partitions meanwhile
				g.Expect(partitions(t, url)).To(And(
					ContainElement("canopy_history_transitions_p"+recent.At.Format("20060102")),
					Not(ContainElement("canopy_history_transitions_p"+old.At.Format("20060102")))),
					"the old day's partition is dropped, the recent day's kept")
			}
		})
	}
}

// partitions lists the daily partitions of the transitions table at url.
func partitions(t *testing.T, url string) []string {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	rows, _ := conn.Query(t.Context(), `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = 'canopy_history_transitions' ORDER BY 1`)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestDiskFull: the SQLite file cannot grow (a file size limit on the
// process, which the filesystem enforces as it would a full disk); the
// hub's Deployment says so, and once the file can grow again every change
// is stored and the condition turns True.
func TestDiskFull(t *testing.T) {
	g := NewWithT(t)
	url := filepath.Join(t.TempDir(), "history.db")
	deployment := hubDeployment(t)
	a := newReplica(t, "disk-full")
	a.report(2)
	runRecorder(t, url, "hub-a", recorderOptions{deployment: deployment})
	g.Eventually(stored(t, url, a)).Should(WithTransform(transitions, Equal(a.want("hub-a", 0, 2))))
	g.Eventually(recording(t, deployment)).Should(HaveField("Status", corev1.ConditionTrue))

	var limit syscall.Rlimit
	g.Expect(syscall.Getrlimit(syscall.RLIMIT_FSIZE, &limit)).To(Succeed())
	restore := sync.OnceFunc(func() { g.Expect(syscall.Setrlimit(syscall.RLIMIT_FSIZE, &limit)).To(Succeed()) })
	t.Cleanup(restore)
	var size int64
	for _, f := range []string{url, url + "-wal"} {
		if fi, err := os.Stat(f); err == nil {
			size = max(size, fi.Size())
		}
	}
	full := syscall.Rlimit{Cur: uint64(size) + 16<<10, Max: limit.Max}
	g.Expect(syscall.Setrlimit(syscall.RLIMIT_FSIZE, &full)).To(Succeed())
	a.pad = 40 << 10 // three events of 40 KiB do not fit
	a.report(3)
	g.Eventually(recording(t, deployment)).Should(And(
		HaveField("Status", corev1.ConditionFalse), HaveField("Reason", hubhistory.ReasonDatabaseError),
		HaveField("Message", ContainSubstring("write failed"))))
	g.Eventually(eventReasons(t, deployment)).Should(Equal([]string{"Warning DatabaseError"}))

	restore()
	g.Eventually(stored(t, url, a)).Should(WithTransform(transitions, Equal(a.want("hub-a", 0, 5))))
	g.Eventually(recording(t, deployment)).Should(HaveField("Status", corev1.ConditionTrue))
	g.Eventually(eventReasons(t, deployment)).Should(Equal([]string{"Warning DatabaseError", "Normal Recording"}))
}
