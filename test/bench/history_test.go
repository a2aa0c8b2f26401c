//go:build linux

package bench

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/internal/test/postgres"
	"github.com/canopy-policy/canopy/pkg/history"
)

// historyBatch is the rows per transaction of the SQLite ceiling: the
// recorder's own bound on a batch.
const historyBatch = 2000

// historyBench is one history stage run: the hub stage's replicas, and
// canopy-hub recording first to SQLite, then to PostgreSQL.
type historyBench struct {
	*hubBench
	kind    string // the database the hub records to: "sqlite" or "postgres"
	url     string // the hub's --history-database
	pg      *postgres.Server
	changes []time.Time // the agents' timestamps of the status changes so far, oldest first
}

// BenchmarkHistory writes one compliance change to each of the hub stage's
// 50,000 replicas, as agents would, and measures the time until every
// transition is in the history store: on SQLite; then, after canopy-hub
// restarts on an empty PostgreSQL, the time until it has caught up with
// what the replicas' histories hold; then one more change each, on
// PostgreSQL. Each change's ceiling is the same rows written to the same
// table by a plain batched insert (SQLite) or one COPY (PostgreSQL).
func BenchmarkHistory(b *testing.B) {
	ctx := b.Context()
	for b.Loop() {
		h := startHistoryBench(ctx, b)
		results.add(h.record(ctx, b))
		results.add(h.switchToPostgres(ctx, b))
		results.add(h.record(ctx, b))
		h.hub.stop()
	}
}

// startHistoryBench starts a hub API server, seeds the hub stage's
// clusters and placements, starts canopy-hub recording to a new SQLite
// database, and propagates the roots.
func startHistoryBench(ctx context.Context, b testing.TB) *historyBench {
	b.Helper()
	h := &historyBench{hubBench: startHubAPIServer(ctx, b), kind: "sqlite"}
	h.url = filepath.Join(b.TempDir(), "history.db")
	h.startHub(ctx, b)
	h.propagate(ctx, b)
	return h
}

// startHub starts canopy-hub recording to h.url and waits for its metrics.
func (h *historyBench) startHub(ctx context.Context, b testing.TB) {
	b.Helper()
	h.hub = startHub(ctx, b, h.cp.KubeconfigPath, "--history-database="+h.url, "--hub-name=bench")
}

// switchToPostgres restarts canopy-hub on an empty PostgreSQL and measures
// the time from its start until it has stored what every replica's
// history holds: one transition per replica per change so far.
func (h *historyBench) switchToPostgres(ctx context.Context, b testing.TB) row {
	b.Helper()
	h.hub.stop()
	h.kind, h.pg = "postgres", postgres.Start(b)
	h.url = h.pg.URL()
	replicas := len(h.clusters) * len(h.policies)
	want := replicas * len(h.changes)
	start := time.Now()
	h.startHub(ctx, b)
	if err := waitFor(ctx, "the history caught up", 250*time.Millisecond, func(ctx context.Context) (bool, error) {
		n, _, err := h.written(ctx)
		return n >= float64(want), err
	}); err != nil {
		b.Fatal(err)
	}
	caughtUp := since(start)
	rows, gaps, err := countStored(ctx, h.url, time.Time{})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("history (postgres): caught up with %d transitions in %.1f s after the hub started", rows, caughtUp)
	return row{
		Stage:   "history (postgres): hub started, every replica's history stored (catch-up)",
		Scale:   h.scaleText(),
		Units:   float64(replicas),
		Unit:    "replicas",
		Seconds: caughtUp,
		Extra: []metric{
			{Name: "rows", Value: float64(rows)},
			{Name: "gaps", Value: float64(gaps)},
			{Name: "hub peak RSS", Value: h.hub.peakRSS(), Unit: "MiB"},
		},
	}
}

// scaleText says what the stage measured.
func (h *historyBench) scaleText() string {
	return fmt.Sprintf("%d clusters × %d policies, one change each", len(h.clusters), len(h.policies))
}

// startHubAPIServer starts a hub API server and seeds the clusters and
// placements (startHubBench then starts canopy-hub).
func startHubAPIServer(ctx context.Context, b testing.TB) *hubBench {
	b.Helper()
	cp, err := controlplane.Start(ctx, "hub")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cp.Stop() })
	h := &hubBench{cp: cp}
	if h.c, err = plainClient(cp.Config); err != nil {
		b.Fatal(err)
	}
	for i := range scaled(hubClusters) {
		h.clusters = append(h.clusters, clusterName(i))
	}
	for i := range hubPolicies {
		h.policies = append(h.policies, fmt.Sprintf("policy-%02d", i))
	}
	if err := h.seed(ctx); err != nil {
		b.Fatal(err)
	}
	return h
}

// record writes one more compliance event to every replica's history and
// measures the time until the store holds every one of them; its ceiling
// is the same rows written to a fresh database by a plain client.
func (h *historyBench) record(ctx context.Context, b testing.TB) row {
	b.Helper()
	replicas := len(h.clusters) * len(h.policies)
	before, _, err := h.written(ctx)
	if err != nil {
		b.Fatal(err)
	}
	at := time.Now().UTC().Truncate(time.Second)
	if n := len(h.changes); n > 0 && !at.After(h.changes[n-1]) {
		at = h.changes[n-1].Add(time.Second) // status history keeps seconds
	}
	h.changes = append(h.changes, at)
	start := time.Now()
	profileDuring(ctx, b, h.hub, 30*time.Second, "hub-history-"+h.kind)
	if err := parallel(ctx, replicas, agentWriters, func(ctx context.Context, i int) error {
		return h.c.Status().Patch(ctx, h.replica(i), client.RawPatch(types.MergePatchType, h.statusPatch(i)))
	}); err != nil {
		b.Fatal(err)
	}
	writers := since(start)
	if err := waitFor(ctx, "every transition in the history store", 250*time.Millisecond, func(ctx context.Context) (bool, error) {
		n, _, err := h.written(ctx)
		return n-before >= float64(replicas), err
	}); err != nil {
		b.Fatal(err)
	}
	stored := since(start)
	rows, gaps, err := countStored(ctx, h.url, at)
	if err != nil {
		b.Fatal(err)
	}
	ceil, err := h.ceiling(ctx, b, replicas, at)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("history (%s): %d transitions stored in %.1f s (status writes %.1f s); plain client %.2f s", h.kind, rows, stored, writers, ceil)
	ceilingName := map[string]string{"sqlite": "batched insert", "postgres": "COPY"}[h.kind]
	return row{
		Stage:          fmt.Sprintf("history (%s): replica status → transitions stored, ceiling a plain %s", h.kind, ceilingName),
		Scale:          h.scaleText(),
		Units:          float64(replicas),
		Unit:           "replicas",
		Seconds:        stored,
		CeilingSeconds: ceil,
		Extra: []metric{
			{Name: "rows", Value: float64(rows)},
			{Name: "gaps", Value: float64(gaps)},
			{Name: "status writes", Value: writers, Unit: "s"},
			{Name: "stored after the last write", Value: stored - writers, Unit: "s"},
			{Name: "hub peak RSS", Value: h.hub.peakRSS(), Unit: "MiB"},
		},
	}
}

// replica is the i-th replica (cluster i/policies, policy i%policies).
func (h *historyBench) replica(i int) *policyv1.Policy {
	p := &policyv1.Policy{}
	p.Namespace = h.clusters[i/len(h.policies)]
	p.Name = policyNamespace + "." + h.policies[i%len(h.policies)]
	return p
}

// statusPatch is the status an agent reports on replica i after each
// change so far: its one template's compliance and history, newest first.
func (h *historyBench) statusPatch(i int) []byte {
	template := h.policies[i%len(h.policies)]
	var events []any
	for k := len(h.changes) - 1; k >= 0; k-- {
		events = append(events, map[string]any{
			"lastTimestamp": h.changes[k].Format(time.RFC3339),
			"message":       h.message(k),
			"eventName":     fmt.Sprintf("%s.%d.%d", template, i, k),
		})
	}
	state := []string{"Compliant", "NonCompliant"}[(len(h.changes)-1)%2]
	data, _ := json.Marshal(map[string]any{"status": map[string]any{ //nolint:errchkjson // plain maps of strings
		"compliant": state,
		"details": []any{map[string]any{
			"templateMeta": map[string]any{"name": template},
			"compliant":    state,
			"history":      events,
		}},
	}})
	return data
}

// message is the compliance message of change k: Compliant and
// NonCompliant in turn.
func (h *historyBench) message(k int) string {
	if k%2 == 1 {
		return "NonCompliant; violation - namespaces [default] not found"
	}
	return "Compliant; notification - namespaces [default] found as specified"
}

// transition is the row the recorder stores for change k of replica i.
func (h *historyBench) transition(i, k int) history.Transition {
	state, message, _ := strings.Cut(h.message(k), "; ")
	return history.Transition{
		Hub: "bench", Cluster: h.clusters[i/len(h.policies)], Template: h.policies[i%len(h.policies)],
		Policy: history.Policy{Namespace: policyNamespace, Name: h.policies[i%len(h.policies)]},
		State:  state, Message: message, At: h.changes[k],
	}
}

// written reads canopy-hub's counters of transitions and gaps written.
func (h *historyBench) written(ctx context.Context) (rows, gaps float64, _ error) {
	data, err := h.hub.scrape(ctx)
	if err != nil {
		return 0, 0, err
	}
	s := bufio.NewScanner(bytes.NewReader(data))
	for s.Scan() {
		name, value, ok := strings.Cut(s.Text(), " ")
		if !ok {
			continue
		}
		switch name {
		case "canopy_history_rows_written_total":
			rows, err = strconv.ParseFloat(value, 64)
		case "canopy_history_gaps_total":
			gaps, err = strconv.ParseFloat(value, 64)
		}
		if err != nil {
			return 0, 0, fmt.Errorf("parsing %s: %w", name, err)
		}
	}
	return rows, gaps, s.Err()
}

// ceiling writes the stage's rows to a fresh database of the stage's
// kind, in the table the store creates: one COPY (PostgreSQL), or
// prepared INSERTs in transactions of historyBatch rows (SQLite). The
// rows are built before the clock starts.
func (h *historyBench) ceiling(ctx context.Context, b testing.TB, n int, at time.Time) (float64, error) {
	b.Helper()
	url := filepath.Join(b.TempDir(), "ceiling.db")
	if h.kind == "postgres" {
		url = h.pg.CreateDatabase(fmt.Sprintf("ceiling%d", len(h.changes)))
	}
	s, err := history.Open(ctx, url)
	if err != nil {
		return 0, fmt.Errorf("opening the ceiling's database: %w", err)
	}
	// Note: the day's partition exists before the clock starts, as it
	// did for the hub.
	if _, err := s.Write(ctx, []history.Transition{{Hub: "ceiling", At: at}}, nil); err != nil {
		return 0, fmt.Errorf("preparing the ceiling's database: %w", err)
	}
	if err := s.Close(); err != nil {
		return 0, err
	}
	rows := make([][]any, n)
	now := time.Now()
	for i := range rows {
		t := h.transition(i, len(h.changes)-1)
		rows[i] = []any{t.Key(), t.Hub, t.Cluster, t.Policy.Namespace, t.Policy.Name, t.Template, t.State, t.Message, t.At, now}
	}
	if h.kind == "postgres" {
		return copyRows(ctx, url, rows)
	}
	return insertRows(ctx, url, rows)
}

// historyColumns are the columns of the transitions table, in the order of
// the ceiling's rows.
var historyColumns = []string{"key", "hub", "cluster", "policy_namespace", "policy_name", "template", "state", "message", "at", "recorded_at"}

// copyRows writes rows with one COPY and returns how long it took.
func copyRows(ctx context.Context, url string, rows [][]any) (float64, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return 0, err
	}
	defer func() { _ = conn.Close(context.Background()) }() // Note: nothing to do about a failed close of the bench's connection
	start := time.Now()
	n, err := conn.CopyFrom(ctx, pgx.Identifier{"canopy_history_transitions"}, historyColumns, pgx.CopyFromRows(rows))
	if err != nil || int(n) != len(rows) {
		return 0, fmt.Errorf("copying %d rows (%d copied): %w", len(rows), n, err)
	}
	return since(start), nil
}

// insertRows writes rows with a prepared INSERT, historyBatch rows per
// transaction, and returns how long it took.
func insertRows(ctx context.Context, path string, rows [][]any) (float64, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
	if err != nil {
		return 0, err
	}
	defer func() { _ = db.Close() }() // Note: nothing to do about a failed close of the bench's database
	db.SetMaxOpenConns(1)
	insert := `INSERT INTO canopy_history_transitions (` + strings.Join(historyColumns, ", ") + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	start := time.Now()
	for from := 0; from < len(rows); from += historyBatch {
		if err := insertBatch(ctx, db, insert, rows[from:min(len(rows), from+historyBatch)]); err != nil {
			return 0, err
		}
	}
	return since(start), nil
}

// insertBatch inserts rows in one transaction; times are Unix nanoseconds,
// as the store keeps them in SQLite.
func insertBatch(ctx context.Context, db *sql.DB, insert string, rows [][]any) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }() // Note: after Commit, a no-op
	stmt, err := tx.PrepareContext(ctx, insert)
	if err != nil {
		return err
	}
	for _, r := range rows {
		args := append([]any(nil), r...)
		args[8], args[9] = r[8].(time.Time).UnixNano(), r[9].(time.Time).UnixNano()
		if _, err := stmt.ExecContext(ctx, args...); err != nil {
			return fmt.Errorf("inserting: %w", err)
		}
	}
	return tx.Commit()
}

// countStored counts the transitions and gaps of hub "bench" in the store
// at url, since a time.
func countStored(ctx context.Context, url string, since time.Time) (rows, gaps int, _ error) {
	s, err := history.Open(ctx, url)
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = s.Close() }() // Note: read only
	res, err := s.Query(ctx, history.Query{Hub: "bench", Since: since})
	if err != nil {
		return 0, 0, err
	}
	return len(res.Transitions), len(res.Gaps), nil
}

// TestHistoryCounts runs the history stage at a small scale and checks
// what does not depend on the machine: every status change is one
// transition in the store, on SQLite, after a restart on PostgreSQL, and
// on PostgreSQL; and no gap.
func TestHistoryCounts(t *testing.T) {
	useCurrentBinaries(t)
	scaleOverride = countScale
	t.Cleanup(func() { scaleOverride = 0 })
	ctx := t.Context()
	h := startHistoryBench(ctx, t)
	replicas := float64(len(h.clusters) * len(h.policies))
	for _, r := range []row{h.record(ctx, t), h.switchToPostgres(ctx, t), h.record(ctx, t)} {
		expectCount(t, r, "rows", replicas)
		expectCount(t, r, "gaps", 0)
	}
	_, gaps, err := h.written(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if gaps != 0 {
		t.Errorf("canopy_history_gaps_total is %g, want 0", gaps)
	}
}
