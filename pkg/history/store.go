package history

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/canopy-policy/canopy/pkg/historyview"
)

// SchemaVersion is the version of the tables this package writes and
// reads. Open creates them in an empty database and refuses a database
// whose recorded version differs.
const SchemaVersion = 1

// DefaultRetention is how long transitions are kept: one year.
const DefaultRetention = 365 * 24 * time.Hour

// ErrSchemaVersion is returned (wrapped) by Open for a database that holds
// another schema version than SchemaVersion.
var ErrSchemaVersion = errors.New("history database has another schema version")

// ErrBadURL is returned (wrapped) by Open for a PostgreSQL URL it cannot
// parse. The error never quotes the URL, which may hold a password.
var ErrBadURL = errors.New("--history-database is not a valid PostgreSQL URL")

// Policy names a root policy on a hub (historyview.Policy).
type Policy = historyview.Policy

// Replica names the replica of one root policy on one cluster, as the
// history keys it.
type Replica struct {
	// Cluster is the managed cluster of the replica.
	Cluster string
	// Policy is the root policy the replica copies.
	Policy Policy
}

// WriteResult says how much of a Write was new.
type WriteResult struct {
	// Transitions is how many transitions were not stored before.
	Transitions int
	// Gaps is how many gaps were not stored before.
	Gaps int
}

// Transition is one compliance event an agent reported for one template of
// one replica (historyview.Transition).
type Transition = historyview.Transition

// Gap says that more transitions of one template happened than a replica's
// history held (historyview.Gap).
type Gap = historyview.Gap

// Query selects transitions and gaps.
type Query struct {
	// Hub limits the result to one hub; empty means every hub.
	Hub string
	// Cluster limits the result to one cluster; empty means every cluster.
	Cluster string
	// Policies limits the result to these root policies; empty means every
	// policy.
	Policies []Policy
	// Since drops transitions and gaps that ended before it; zero means no
	// lower bound.
	Since time.Time
	// Limit bounds the transitions returned (the newest are kept); zero
	// means no bound.
	Limit int
}

// Result is what a Query found, oldest first.
type Result struct {
	// Transitions are the transitions found, oldest first.
	Transitions []Transition `json:"transitions"`
	// Gaps are the gaps found, oldest first.
	Gaps []Gap `json:"gaps"`
}

// Store keeps compliance transitions. Its methods are safe for concurrent
// use.
type Store interface {
	// Write stores transitions and gaps in one transaction, skipping those
	// already stored, and returns how many were new.
	Write(ctx context.Context, transitions []Transition, gaps []Gap) (WriteResult, error)
	// Latest returns, per template, the agent timestamp of the newest
	// transition stored for one hub, cluster and policy.
	Latest(ctx context.Context, hub, cluster string, policy Policy) (map[string]time.Time, error)
	// LatestAll returns Latest of every replica one hub recorded, in one
	// query: what a starting hub reads instead of one query per replica.
	LatestAll(ctx context.Context, hub string) (map[Replica]map[string]time.Time, error)
	// Query returns the transitions and gaps q selects.
	Query(ctx context.Context, q Query) (Result, error)
	// Prune deletes what ended before cutoff (on PostgreSQL: whole
	// partitions of days before it) and returns how many partitions or rows
	// it dropped.
	Prune(ctx context.Context, cutoff time.Time) (int, error)
	// Ping checks that the database answers.
	Ping(ctx context.Context) error
	// Close releases the database.
	Close() error
}

// IsPostgres reports whether url names a PostgreSQL database
// ("postgres://..." or "postgresql://...") rather than a SQLite file.
func IsPostgres(url string) bool {
	return strings.HasPrefix(url, "postgres://") || strings.HasPrefix(url, "postgresql://")
}

// Disabled reports whether url switches the history off: empty or "none".
func Disabled(url string) bool {
	return url == "" || url == "none"
}

// Open opens (creating and migrating it when needed) the store url names:
// PostgreSQL for "postgres://..." and "postgresql://...", else a SQLite
// file at that path. A malformed URL or a database of another schema
// version is an error; so is an unreachable database, which callers may
// retry.
func Open(ctx context.Context, url string) (Store, error) {
	if Disabled(url) {
		return nil, errors.New("no history database given")
	}
	if IsPostgres(url) {
		return openPostgres(ctx, url)
	}
	return openSQLite(ctx, url)
}

// checkVersion returns nil when found is SchemaVersion.
func checkVersion(found int) error {
	if found != SchemaVersion {
		return fmt.Errorf("%w: the database is at version %d, this hub reads and writes version %d; run a hub of the database's version or point --history-database at another database",
			ErrSchemaVersion, found, SchemaVersion)
	}
	return nil
}

// day returns the UTC day that holds t.
func day(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// addLatest sets the newest event at of template of replica r in latest.
func addLatest(latest map[Replica]map[string]time.Time, r Replica, template string, at time.Time) {
	if latest[r] == nil {
		latest[r] = map[string]time.Time{}
	}
	latest[r][template] = at
}
