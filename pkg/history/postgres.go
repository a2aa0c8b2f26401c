package history

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// partitionPrefix starts the name of every daily partition of the
// transitions table; the day follows as YYYYMMDD.
const partitionPrefix = "canopy_history_transitions_p"

// checkViolation is PostgreSQL's SQLSTATE of a row no partition accepts.
const checkViolation = "23514"

// lockKey is the advisory lock that serialises schema changes (creating the
// tables, a partition, dropping partitions) between the hubs that share one
// database.
const lockKey = 0x63616e6f7079 // "canopy"

// postgresSchema creates the tables of SchemaVersion in PostgreSQL.
var postgresSchema = []string{
	`CREATE TABLE canopy_history_transitions (
		key bytea NOT NULL,
		hub text NOT NULL,
		cluster text NOT NULL,
		policy_namespace text NOT NULL,
		policy_name text NOT NULL,
		template text NOT NULL,
		state text NOT NULL,
		message text NOT NULL,
		at timestamptz NOT NULL,
		recorded_at timestamptz NOT NULL DEFAULT now(),
		PRIMARY KEY (key, at)
	) PARTITION BY RANGE (at)`,
	`CREATE INDEX canopy_history_transitions_policy ON canopy_history_transitions (policy_namespace, policy_name, cluster, at)`,
	`CREATE TABLE canopy_history_gaps (
		hub text NOT NULL,
		cluster text NOT NULL,
		policy_namespace text NOT NULL,
		policy_name text NOT NULL,
		template text NOT NULL,
		from_at timestamptz NOT NULL,
		to_at timestamptz NOT NULL,
		recorded_at timestamptz NOT NULL DEFAULT now(),
		PRIMARY KEY (hub, cluster, policy_namespace, policy_name, template, from_at, to_at)
	)`,
}

// postgresStore is the Store on PostgreSQL.
type postgresStore struct {
	pool *pgxpool.Pool

	mu         sync.Mutex
	partitions map[string]bool // days whose partition is known to exist
}

// openPostgres connects to url and creates or checks the tables.
func openPostgres(ctx context.Context, url string) (*postgresStore, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// Note: pgx's parse errors can quote the URL, password included.
		return nil, ErrBadURL
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to the history database: %w", err)
	}
	s := &postgresStore{pool: pool, partitions: map[string]bool{}}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("preparing the history database: %w", err)
	}
	return s, nil
}

// migrate creates the tables of SchemaVersion in an empty database and
// checks the version of one that is not, under the schema lock.
func (s *postgresStore) migrate(ctx context.Context) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(lockKey)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS canopy_history_schema (version integer NOT NULL)`); err != nil {
			return err
		}
		var version int
		err := tx.QueryRow(ctx, `SELECT version FROM canopy_history_schema`).Scan(&version)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			for _, stmt := range postgresSchema {
				if _, err := tx.Exec(ctx, stmt); err != nil {
					return fmt.Errorf("creating the tables: %w", err)
				}
			}
			_, err = tx.Exec(ctx, `INSERT INTO canopy_history_schema (version) VALUES ($1)`, SchemaVersion)
			return err
		case err != nil:
			return err
		default:
			return checkVersion(version)
		}
	})
}

// partitionName returns the name of the partition holding day d.
func partitionName(d time.Time) string {
	return partitionPrefix + d.Format("20060102")
}

// ensurePartitions creates the daily partitions that hold transitions.
func (s *postgresStore) ensurePartitions(ctx context.Context, transitions []Transition) error {
	var missing []time.Time
	s.mu.Lock()
	seen := map[string]bool{}
	for _, t := range transitions {
		d := day(t.At)
		if name := partitionName(d); !s.partitions[name] && !seen[name] {
			seen[name] = true
			missing = append(missing, d)
		}
	}
	s.mu.Unlock()
	if len(missing) == 0 {
		return nil
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(lockKey)); err != nil {
			return err
		}
		for _, d := range missing {
			stmt := fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s PARTITION OF canopy_history_transitions FOR VALUES FROM ('%s') TO ('%s')`,
				partitionName(d), d.Format(time.RFC3339), d.AddDate(0, 0, 1).Format(time.RFC3339))
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return fmt.Errorf("creating partition %s: %w", partitionName(d), err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.mu.Lock()
	for _, d := range missing {
		s.partitions[partitionName(d)] = true
	}
	s.mu.Unlock()
	return nil
}

// Write implements Store: one INSERT of all transitions through unnest.
// When a partition it knew of is gone (another hub's retention dropped it),
// it forgets the partitions it knows and tries once more.
func (s *postgresStore) Write(ctx context.Context, transitions []Transition, gaps []Gap) (WriteResult, error) {
	res, err := s.write(ctx, transitions, gaps)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == checkViolation && strings.Contains(pgErr.Message, "no partition") {
		s.mu.Lock()
		s.partitions = map[string]bool{}
		s.mu.Unlock()
		res, err = s.write(ctx, transitions, gaps)
	}
	return res, err
}

// write is one attempt of Write.
func (s *postgresStore) write(ctx context.Context, transitions []Transition, gaps []Gap) (WriteResult, error) {
	if err := s.ensurePartitions(ctx, transitions); err != nil {
		return WriteResult{}, fmt.Errorf("writing history: %w", err)
	}
	n := len(transitions)
	keys := make([][]byte, n)
	cols := make([][]string, 7)
	for i := range cols {
		cols[i] = make([]string, n)
	}
	ats := make([]time.Time, n)
	for i, t := range transitions {
		keys[i] = t.Key()
		for j, v := range []string{t.Hub, t.Cluster, t.Policy.Namespace, t.Policy.Name, t.Template, t.State, t.Message} {
			cols[j][i] = v
		}
		ats[i] = t.At
	}
	var written WriteResult
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if n > 0 {
			tag, err := tx.Exec(ctx, `INSERT INTO canopy_history_transitions
				(key, hub, cluster, policy_namespace, policy_name, template, state, message, at)
				SELECT * FROM unnest($1::bytea[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::timestamptz[])
				ON CONFLICT DO NOTHING`,
				keys, cols[0], cols[1], cols[2], cols[3], cols[4], cols[5], cols[6], ats)
			if err != nil {
				return err
			}
			written.Transitions = int(tag.RowsAffected())
		}
		for _, g := range gaps {
			tag, err := tx.Exec(ctx, `INSERT INTO canopy_history_gaps
				(hub, cluster, policy_namespace, policy_name, template, from_at, to_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`,
				g.Hub, g.Cluster, g.Policy.Namespace, g.Policy.Name, g.Template, g.From, g.To)
			if err != nil {
				return fmt.Errorf("gaps: %w", err)
			}
			written.Gaps += int(tag.RowsAffected())
		}
		return nil
	})
	if err != nil {
		return WriteResult{}, fmt.Errorf("writing history: %w", err)
	}
	return written, nil
}

// Latest implements Store.
func (s *postgresStore) Latest(ctx context.Context, hub, cluster string, policy Policy) (map[string]time.Time, error) {
	rows, err := s.pool.Query(ctx, `SELECT template, MAX(at) FROM canopy_history_transitions
		WHERE policy_namespace = $1 AND policy_name = $2 AND cluster = $3 AND hub = $4 GROUP BY template`,
		policy.Namespace, policy.Name, cluster, hub)
	if err != nil {
		return nil, fmt.Errorf("reading the latest history of %s on %s: %w", policy, cluster, err)
	}
	out := map[string]time.Time{}
	var template string
	var at time.Time
	_, err = pgx.ForEachRow(rows, []any{&template, &at}, func() error {
		out[template] = at.UTC()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the latest history of %s on %s: %w", policy, cluster, err)
	}
	return out, nil
}

// LatestAll implements Store.
func (s *postgresStore) LatestAll(ctx context.Context, hub string) (map[Replica]map[string]time.Time, error) {
	rows, err := s.pool.Query(ctx, `SELECT cluster, policy_namespace, policy_name, template, MAX(at) FROM canopy_history_transitions
		WHERE hub = $1 GROUP BY cluster, policy_namespace, policy_name, template`, hub)
	if err != nil {
		return nil, fmt.Errorf("reading the latest history of hub %s: %w", hub, err)
	}
	out := map[Replica]map[string]time.Time{}
	var r Replica
	var template string
	var at time.Time
	_, err = pgx.ForEachRow(rows, []any{&r.Cluster, &r.Policy.Namespace, &r.Policy.Name, &template, &at}, func() error {
		addLatest(out, r, template, at.UTC())
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the latest history of hub %s: %w", hub, err)
	}
	return out, nil
}

// Query implements Store.
func (s *postgresStore) Query(ctx context.Context, q Query) (Result, error) {
	where, args := postgresWhere(q, "at")
	sel := `SELECT hub, cluster, policy_namespace, policy_name, template, state, message, at FROM canopy_history_transitions` + where
	if q.Limit > 0 {
		sel = `SELECT * FROM (` + sel + fmt.Sprintf(` ORDER BY at DESC LIMIT %d) newest`, q.Limit)
	}
	rows, err := s.pool.Query(ctx, sel+` ORDER BY at, cluster, template`, args...)
	if err != nil {
		return Result{}, fmt.Errorf("querying history: %w", err)
	}
	var res Result
	var t Transition
	_, err = pgx.ForEachRow(rows, []any{&t.Hub, &t.Cluster, &t.Policy.Namespace, &t.Policy.Name, &t.Template, &t.State, &t.Message, &t.At}, func() error {
		t.At = t.At.UTC()
		res.Transitions = append(res.Transitions, t)
		return nil
	})
	if err != nil {
		return Result{}, fmt.Errorf("querying history: %w", err)
	}
	where, args = postgresWhere(q, "to_at")
	rows, err = s.pool.Query(ctx, `SELECT hub, cluster, policy_namespace, policy_name, template, from_at, to_at FROM canopy_history_gaps`+where+` ORDER BY from_at, cluster, template`, args...)
	if err != nil {
		return Result{}, fmt.Errorf("querying history gaps: %w", err)
	}
	var g Gap
	_, err = pgx.ForEachRow(rows, []any{&g.Hub, &g.Cluster, &g.Policy.Namespace, &g.Policy.Name, &g.Template, &g.From, &g.To}, func() error {
		g.From, g.To = g.From.UTC(), g.To.UTC()
		res.Gaps = append(res.Gaps, g)
		return nil
	})
	if err != nil {
		return Result{}, fmt.Errorf("querying history gaps: %w", err)
	}
	return res, nil
}

// postgresWhere returns the WHERE clause of q, with timeColumn compared to
// q.Since, and its arguments.
func postgresWhere(q Query, timeColumn string) (string, []any) {
	var conds []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if q.Hub != "" {
		conds = append(conds, "hub = "+arg(q.Hub))
	}
	if q.Cluster != "" {
		conds = append(conds, "cluster = "+arg(q.Cluster))
	}
	if len(q.Policies) > 0 {
		var or []string
		for _, p := range q.Policies {
			or = append(or, "(policy_namespace = "+arg(p.Namespace)+" AND policy_name = "+arg(p.Name)+")")
		}
		conds = append(conds, "("+strings.Join(or, " OR ")+")")
	}
	if !q.Since.IsZero() {
		conds = append(conds, timeColumn+" >= "+arg(q.Since))
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}

// Prune implements Store: it drops every daily partition that ends at or
// before cutoff, and the gaps that ended before it.
func (s *postgresStore) Prune(ctx context.Context, cutoff time.Time) (int, error) {
	dropped := 0
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(lockKey)); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT c.relname FROM pg_inherits i
			JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
			WHERE p.relname = 'canopy_history_transitions' AND p.relnamespace = to_regnamespace(current_schema())::oid`)
		if err != nil {
			return err
		}
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		for _, name := range names {
			d, err := time.Parse("20060102", strings.TrimPrefix(name, partitionPrefix))
			if err != nil || d.AddDate(0, 0, 1).After(cutoff) {
				continue // not ours, or it still holds rows to keep
			}
			if _, err := tx.Exec(ctx, "DROP TABLE "+pgx.Identifier{name}.Sanitize()); err != nil {
				return fmt.Errorf("dropping partition %s: %w", name, err)
			}
			s.mu.Lock()
			delete(s.partitions, name)
			s.mu.Unlock()
			dropped++
		}
		_, err = tx.Exec(ctx, `DELETE FROM canopy_history_gaps WHERE to_at < $1`, cutoff)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("pruning history: %w", err)
	}
	return dropped, nil
}

// Ping implements Store.
func (s *postgresStore) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }

// Close implements Store.
func (s *postgresStore) Close() error {
	s.pool.Close()
	return nil
}
