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
// canopy-hub recording to one database.
type historyBench struct {
	*hubBench
	kind string // "sqlite" or "postgres"
	url  string // the hub's --history-database
	pg   *postgres.Server
	at   time.Time // the agents' timestamp of the status change
}

// BenchmarkHistory writes one compliance change to each of the hub stage's
// 50,000 replicas, as agents would, and measures the time until every
// transition is in the history store, on SQLite and on PostgreSQL, beside
// the same rows written to the same table by a plain batched insert
// (SQLite) or a plain COPY (PostgreSQL).
func BenchmarkHistory(b *testing.B) {
	ctx := b.Context()
	for b.Loop() {
		for _, kind := range []string{"sqlite", "postgres"} {
			h := startHistoryBench(ctx, b, kind)
			r := h.record(ctx, b)
			h.hub.stop()
			results.add(r)
		}
	}
}

// startHistoryBench starts a hub API server, seeds the hub stage's
// clusters and placements, starts canopy-hub recording to a new database
// of kind, and propagates the roots.
func startHistoryBench(ctx context.Context, b testing.TB, kind string) *historyBench {
	b.Helper()
	h := &historyBench{kind: kind, hubBench: startHubAPIServer(ctx, b)}
	switch kind {
	case "postgres":
		h.pg = postgres.Start(b)
		h.url = h.pg.URL()
	default:
		h.url = filepath.Join(b.TempDir(), "history.db")
	}
	var err error
	h.hub, err = newProcess("canopy-hub", b.TempDir(), "--kubeconfig="+h.cp.KubeconfigPath, "--addon-manager=false",
		"--history-database="+h.url, "--hub-name=bench")
	if err != nil {
		b.Fatal(err)
	}
	if err := h.hub.start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(h.hub.stop)
	if err := waitFor(ctx, "canopy-hub's metrics", 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		_, err := h.hub.scrape(ctx)
		return err == nil, err
	}); err != nil {
		b.Fatal(err)
	}
	h.propagate(ctx, b)
	return h
}

// startHubAPIServer is startHubBench without canopy-hub.
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

// record writes one compliance event to every replica's history and
// measures the time until the store holds every one of them; its ceiling
// is the same rows written to a fresh database by a plain client.
func (h *historyBench) record(ctx context.Context, b testing.TB) row {
	b.Helper()
	replicas := len(h.clusters) * len(h.policies)
	before, _, err := h.written(ctx)
	if err != nil {
		b.Fatal(err)
	}
	h.at = time.Now().UTC().Truncate(time.Second)
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
	rows, gaps, err := countStored(ctx, h.url)
	if err != nil {
		b.Fatal(err)
	}
	ceil, err := h.ceiling(ctx, b, replicas)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("history (%s): %d transitions stored in %.1f s (status writes %.1f s); plain client %.1f s", h.kind, rows, stored, writers, ceil)
	ceilingName := map[string]string{"sqlite": "batched insert", "postgres": "COPY"}[h.kind]
	return row{
		Stage:          fmt.Sprintf("history (%s): replica status → transitions stored, ceiling a plain %s", h.kind, ceilingName),
		Scale:          fmt.Sprintf("%d clusters × %d policies, one change each", len(h.clusters), len(h.policies)),
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

// statusPatch is the status an agent reports on replica i after its one
// template turned Compliant: the compliance and one history event.
func (h *historyBench) statusPatch(i int) []byte {
	template := h.policies[i%len(h.policies)]
	data, _ := json.Marshal(map[string]any{"status": map[string]any{ //nolint:errchkjson // plain maps of strings
		"compliant": "Compliant",
		"details": []any{map[string]any{
			"templateMeta": map[string]any{"name": template},
			"compliant":    "Compliant",
			"history": []any{map[string]any{
				"lastTimestamp": h.at.Format(time.RFC3339),
				"message":       "Compliant; notification - namespaces [default] found as specified",
				"eventName":     fmt.Sprintf("%s.%d", template, i),
			}},
		}},
	}})
	return data
}

// transition is the row the recorder stores for replica i.
func (h *historyBench) transition(i int) history.Transition {
	return history.Transition{
		Hub: "bench", Cluster: h.clusters[i/len(h.policies)], Template: h.policies[i%len(h.policies)],
		Policy: history.Policy{Namespace: policyNamespace, Name: h.policies[i%len(h.policies)]},
		State:  "Compliant", Message: "notification - namespaces [default] found as specified", At: h.at,
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
func (h *historyBench) ceiling(ctx context.Context, b testing.TB, n int) (float64, error) {
	b.Helper()
	url := filepath.Join(b.TempDir(), "ceiling.db")
	if h.kind == "postgres" {
		url = h.pg.CreateDatabase("ceiling")
	}
	s, err := history.Open(ctx, url)
	if err != nil {
		return 0, fmt.Errorf("opening the ceiling's database: %w", err)
	}
	// Note: the day's partition exists before the clock starts, as it
	// did for the hub.
	if _, err := s.Write(ctx, []history.Transition{{Hub: "ceiling", At: h.at}}, nil); err != nil {
		return 0, fmt.Errorf("preparing the ceiling's database: %w", err)
	}
	if err := s.Close(); err != nil {
		return 0, err
	}
	rows := make([][]any, n)
	now := time.Now()
	for i := range rows {
		t := h.transition(i)
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
// at url.
func countStored(ctx context.Context, url string) (rows, gaps int, _ error) {
	s, err := history.Open(ctx, url)
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = s.Close() }() // Note: read only
	res, err := s.Query(ctx, history.Query{Hub: "bench"})
	if err != nil {
		return 0, 0, err
	}
	return len(res.Transitions), len(res.Gaps), nil
}

// TestHistoryCounts runs the history stage at a small scale on both
// databases and checks what does not depend on the machine: every status
// change is one transition in the store, and no gap.
func TestHistoryCounts(t *testing.T) {
	useCurrentBinaries(t)
	scaleOverride = countScale
	t.Cleanup(func() { scaleOverride = 0 })
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			ctx := t.Context()
			h := startHistoryBench(ctx, t, kind)
			r := h.record(ctx, t)
			replicas := float64(len(h.clusters) * len(h.policies))
			expectCount(t, r, "rows", replicas)
			expectCount(t, r, "gaps", 0)
			_, gaps, err := h.written(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if gaps != 0 {
				t.Errorf("canopy_history_gaps_total is %g, want 0", gaps)
			}
		})
	}
}
