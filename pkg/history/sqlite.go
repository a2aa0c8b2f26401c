package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// sqliteSchema creates the tables of SchemaVersion in SQLite. Timestamps
// are Unix nanoseconds.
var sqliteSchema = []string{
	`CREATE TABLE canopy_history_transitions (
		key BLOB PRIMARY KEY,
		hub TEXT NOT NULL,
		cluster TEXT NOT NULL,
		policy_namespace TEXT NOT NULL,
		policy_name TEXT NOT NULL,
		template TEXT NOT NULL,
		state TEXT NOT NULL,
		message TEXT NOT NULL,
		at INTEGER NOT NULL,
		recorded_at INTEGER NOT NULL
	) WITHOUT ROWID`,
	`CREATE INDEX canopy_history_transitions_policy ON canopy_history_transitions (policy_namespace, policy_name, cluster, at)`,
	`CREATE INDEX canopy_history_transitions_at ON canopy_history_transitions (at)`,
	`CREATE TABLE canopy_history_gaps (
		hub TEXT NOT NULL,
		cluster TEXT NOT NULL,
		policy_namespace TEXT NOT NULL,
		policy_name TEXT NOT NULL,
		template TEXT NOT NULL,
		from_at INTEGER NOT NULL,
		to_at INTEGER NOT NULL,
		recorded_at INTEGER NOT NULL,
		PRIMARY KEY (hub, cluster, policy_namespace, policy_name, template, from_at, to_at)
	) WITHOUT ROWID`,
}

// sqliteStore is the embedded Store: one SQLite file.
type sqliteStore struct {
	db *sql.DB
}

// openSQLite opens the SQLite file at path, creating it, its directory and
// its tables when missing.
func openSQLite(ctx context.Context, path string) (*sqliteStore, error) {
	path = strings.TrimPrefix(path, "file:")
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, fmt.Errorf("creating the directory of the history database %s: %w", path, err)
		}
	}
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("opening the history database %s: %w", path, err)
	}
	// Note: one connection serialises writers, which SQLite does anyway,
	// without SQLITE_BUSY between the hub's own connections.
	db.SetMaxOpenConns(1)
	s := &sqliteStore{db: db}
	if err := s.migrate(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("preparing the history database %s: %w", path, err)
	}
	return s, nil
}

// migrate creates the tables of SchemaVersion in an empty database and
// checks the version of one that is not.
func (s *sqliteStore) migrate(ctx context.Context) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS canopy_history_schema (version INTEGER NOT NULL)`); err != nil {
		return err
	}
	var version int
	err = tx.QueryRowContext(ctx, `SELECT version FROM canopy_history_schema`).Scan(&version)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		for _, stmt := range sqliteSchema {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("creating the tables: %w", err)
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO canopy_history_schema (version) VALUES (?)`, SchemaVersion); err != nil {
			return err
		}
	case err != nil:
		return err
	default:
		if err := checkVersion(version); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// Write implements Store.
func (s *sqliteStore) Write(ctx context.Context, transitions []Transition, gaps []Gap) (WriteResult, error) {
	var written WriteResult
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return written, fmt.Errorf("writing history: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	now := time.Now().UnixNano()
	if len(transitions) > 0 {
		stmt, err := tx.PrepareContext(ctx, `INSERT INTO canopy_history_transitions
			(key, hub, cluster, policy_namespace, policy_name, template, state, message, at, recorded_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`)
		if err != nil {
			return WriteResult{}, fmt.Errorf("writing history: %w", err)
		}
		for _, t := range transitions {
			res, err := stmt.ExecContext(ctx, t.Key(), t.Hub, t.Cluster, t.Policy.Namespace, t.Policy.Name, t.Template, t.State, t.Message, t.At.UnixNano(), now)
			if err != nil {
				return WriteResult{}, fmt.Errorf("writing history: %w", err)
			}
			n, _ := res.RowsAffected()
			written.Transitions += int(n)
		}
	}
	for _, g := range gaps {
		res, err := tx.ExecContext(ctx, `INSERT INTO canopy_history_gaps
			(hub, cluster, policy_namespace, policy_name, template, from_at, to_at, recorded_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
			g.Hub, g.Cluster, g.Policy.Namespace, g.Policy.Name, g.Template, g.From.UnixNano(), g.To.UnixNano(), now)
		if err != nil {
			return WriteResult{}, fmt.Errorf("writing history gaps: %w", err)
		}
		n, _ := res.RowsAffected()
		written.Gaps += int(n)
	}
	if err := tx.Commit(); err != nil {
		return WriteResult{}, fmt.Errorf("writing history: %w", err)
	}
	return written, nil
}

// Latest implements Store.
func (s *sqliteStore) Latest(ctx context.Context, hub, cluster string, policy Policy) (map[string]time.Time, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT template, MAX(at) FROM canopy_history_transitions
		WHERE policy_namespace = ? AND policy_name = ? AND cluster = ? AND hub = ? GROUP BY template`,
		policy.Namespace, policy.Name, cluster, hub)
	if err != nil {
		return nil, fmt.Errorf("reading the latest history of %s on %s: %w", policy, cluster, err)
	}
	defer func() { _ = rows.Close() }() // Note: rows.Err reports what matters
	out := map[string]time.Time{}
	for rows.Next() {
		var template string
		var at int64
		if err := rows.Scan(&template, &at); err != nil {
			return nil, fmt.Errorf("reading the latest history of %s on %s: %w", policy, cluster, err)
		}
		out[template] = time.Unix(0, at).UTC()
	}
	return out, rows.Err()
}

// LatestAll implements Store.
func (s *sqliteStore) LatestAll(ctx context.Context, hub string) (map[Replica]map[string]time.Time, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT cluster, policy_namespace, policy_name, template, MAX(at) FROM canopy_history_transitions
		WHERE hub = ? GROUP BY cluster, policy_namespace, policy_name, template`, hub)
	if err != nil {
		return nil, fmt.Errorf("reading the latest history of hub %s: %w", hub, err)
	}
	defer func() { _ = rows.Close() }() // Note: rows.Err reports what matters
	out := map[Replica]map[string]time.Time{}
	for rows.Next() {
		var r Replica
		var template string
		var at int64
		if err := rows.Scan(&r.Cluster, &r.Policy.Namespace, &r.Policy.Name, &template, &at); err != nil {
			return nil, fmt.Errorf("reading the latest history of hub %s: %w", hub, err)
		}
		addLatest(out, r, template, time.Unix(0, at).UTC())
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the latest history of hub %s: %w", hub, err)
	}
	return out, nil
}

// Query implements Store.
func (s *sqliteStore) Query(ctx context.Context, q Query) (Result, error) {
	where, args := sqliteWhere(q, "at")
	sel := `SELECT hub, cluster, policy_namespace, policy_name, template, state, message, at FROM canopy_history_transitions` + where
	if q.Limit > 0 {
		sel = `SELECT * FROM (` + sel + fmt.Sprintf(` ORDER BY at DESC LIMIT %d)`, q.Limit)
	}
	rows, err := s.db.QueryContext(ctx, sel+` ORDER BY at, cluster, template`, args...)
	if err != nil {
		return Result{}, fmt.Errorf("querying history: %w", err)
	}
	defer func() { _ = rows.Close() }() // Note: rows.Err reports what matters
	var res Result
	for rows.Next() {
		var t Transition
		var at int64
		if err := rows.Scan(&t.Hub, &t.Cluster, &t.Policy.Namespace, &t.Policy.Name, &t.Template, &t.State, &t.Message, &at); err != nil {
			return Result{}, fmt.Errorf("querying history: %w", err)
		}
		t.At = time.Unix(0, at).UTC()
		res.Transitions = append(res.Transitions, t)
	}
	if err := rows.Err(); err != nil {
		return Result{}, fmt.Errorf("querying history: %w", err)
	}
	where, args = sqliteWhere(q, "to_at")
	// Note: where holds placeholders only; the values are args.
	gaps := `SELECT hub, cluster, policy_namespace, policy_name, template, from_at, to_at FROM canopy_history_gaps` + //nolint:gosec // see above
		where + ` ORDER BY from_at, cluster, template`
	gapRows, err := s.db.QueryContext(ctx, gaps, args...)
	if err != nil {
		return Result{}, fmt.Errorf("querying history gaps: %w", err)
	}
	defer func() { _ = gapRows.Close() }() // Note: gapRows.Err reports what matters
	for gapRows.Next() {
		var g Gap
		var from, to int64
		if err := gapRows.Scan(&g.Hub, &g.Cluster, &g.Policy.Namespace, &g.Policy.Name, &g.Template, &from, &to); err != nil {
			return Result{}, fmt.Errorf("querying history gaps: %w", err)
		}
		g.From, g.To = time.Unix(0, from).UTC(), time.Unix(0, to).UTC()
		res.Gaps = append(res.Gaps, g)
	}
	return res, gapRows.Err()
}

// sqliteWhere returns the WHERE clause of q, with timeColumn compared to
// q.Since, and its arguments.
func sqliteWhere(q Query, timeColumn string) (string, []any) {
	var conds []string
	var args []any
	if q.Hub != "" {
		conds, args = append(conds, "hub = ?"), append(args, q.Hub)
	}
	if q.Cluster != "" {
		conds, args = append(conds, "cluster = ?"), append(args, q.Cluster)
	}
	if len(q.Policies) > 0 {
		var or []string
		for _, p := range q.Policies {
			or, args = append(or, "(policy_namespace = ? AND policy_name = ?)"), append(args, p.Namespace, p.Name)
		}
		conds = append(conds, "("+strings.Join(or, " OR ")+")")
	}
	if !q.Since.IsZero() {
		conds, args = append(conds, timeColumn+" >= ?"), append(args, q.Since.UnixNano())
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}

// Prune implements Store: SQLite has no partitions, so it deletes rows.
func (s *sqliteStore) Prune(ctx context.Context, cutoff time.Time) (int, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM canopy_history_transitions WHERE at < ?`, cutoff.UnixNano())
	if err != nil {
		return 0, fmt.Errorf("pruning history: %w", err)
	}
	if _, err := s.db.ExecContext(ctx, `DELETE FROM canopy_history_gaps WHERE to_at < ?`, cutoff.UnixNano()); err != nil {
		return 0, fmt.Errorf("pruning history gaps: %w", err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// Ping implements Store.
func (s *sqliteStore) Ping(ctx context.Context) error { return s.db.PingContext(ctx) }

// Close implements Store.
func (s *sqliteStore) Close() error { return s.db.Close() }
