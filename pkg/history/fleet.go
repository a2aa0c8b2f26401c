package history

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrFleetNeedsPostgres is returned (wrapped) by CheckFleet and OpenFleet
// for a history database that is not PostgreSQL: only a database several
// hubs write to holds more than one hub.
var ErrFleetNeedsPostgres = errors.New("--fleet reads the compliance of every hub from the PostgreSQL database they all record to: set --history-database=postgres://... (the same database on every hub, each hub with its own --hub-name)")

// TemplateState is the newest transition stored for one template of one
// replica: its compliance as far as the database knows, as of At.
type TemplateState struct {
	// Hub is the hub that recorded it.
	Hub string `json:"hub"`
	// Cluster is the managed cluster of the replica.
	Cluster string `json:"cluster"`
	// Policy is the root policy the replica copies.
	Policy Policy `json:"policy"`
	// Template is the policy template's name.
	Template string `json:"template"`
	// State is Compliant, NonCompliant or Pending.
	State string `json:"state"`
	// At is the agent's timestamp of the transition.
	At time.Time `json:"at"`
}

// HubActivity says when one hub last wrote to the database.
type HubActivity struct {
	// Hub is the hub's name (--hub-name).
	Hub string `json:"hub"`
	// LastWrite is when the hub last stored a transition or a gap, by the
	// database's clock.
	LastWrite time.Time `json:"lastWrite"`
	// NewestEvent is the agent's timestamp of the newest transition the
	// hub stored; zero when it stored gaps only.
	NewestEvent time.Time `json:"newestEvent,omitzero"`
}

// Fleet is what one database holds of every hub that records to it, read
// in one snapshot.
type Fleet struct {
	// States are the newest transition of every template of every replica
	// of every hub, ordered by hub, cluster, policy and template.
	States []TemplateState `json:"states"`
	// Hubs are the hubs that ever wrote, ordered by name.
	Hubs []HubActivity `json:"hubs"`
	// ReadAt is the database's clock when the snapshot was taken, the clock
	// of HubActivity.LastWrite, so that ages need no two clocks to agree.
	ReadAt time.Time `json:"readAt"`
}

// FleetStore reads the fleet: the store of a database several hubs share.
type FleetStore interface {
	// Fleet returns what the database holds of every hub.
	Fleet(ctx context.Context) (Fleet, error)
	// Close releases the database.
	Close() error
}

// CheckFleet returns ErrFleetNeedsPostgres unless url names a PostgreSQL
// database.
func CheckFleet(url string) error {
	if Disabled(url) || !IsPostgres(url) {
		return ErrFleetNeedsPostgres
	}
	return nil
}

// OpenFleet opens the PostgreSQL store at url (creating and migrating it as
// Open does) for reading the fleet. Any other url is ErrFleetNeedsPostgres.
func OpenFleet(ctx context.Context, url string) (FleetStore, error) {
	if err := CheckFleet(url); err != nil {
		return nil, err
	}
	return openPostgres(ctx, url)
}

// fleetStatesQuery selects the newest transition per template of each
// replica. Note: agents time events to the second, so two transitions of
// one template can share At; the tie goes to the worse state, so that an
// ambiguous order never reads as Compliant.
const fleetStatesQuery = `SELECT DISTINCT ON (hub, cluster, policy_namespace, policy_name, template)
		hub, cluster, policy_namespace, policy_name, template, state, at
	FROM canopy_history_transitions
	ORDER BY hub, cluster, policy_namespace, policy_name, template, at DESC,
		CASE state WHEN 'NonCompliant' THEN 0 WHEN 'Pending' THEN 1 WHEN 'Compliant' THEN 3 ELSE 2 END`

// fleetHubsQuery selects, per hub, its newest row of either table.
const fleetHubsQuery = `SELECT hub, max(recorded_at), max(newest) FROM (
		SELECT hub, max(recorded_at) AS recorded_at, max(at) AS newest FROM canopy_history_transitions GROUP BY hub
		UNION ALL
		SELECT hub, max(recorded_at), NULL FROM canopy_history_gaps GROUP BY hub
	) per_table GROUP BY hub ORDER BY hub`

// Fleet implements FleetStore, in one read-only transaction so that the
// states, the hubs' activity and the clock are one snapshot.
func (s *postgresStore) Fleet(ctx context.Context) (Fleet, error) {
	var f Fleet
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT now()`).Scan(&f.ReadAt); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, fleetStatesQuery)
		if err != nil {
			return err
		}
		var st TemplateState
		_, err = pgx.ForEachRow(rows, []any{&st.Hub, &st.Cluster, &st.Policy.Namespace, &st.Policy.Name, &st.Template, &st.State, &st.At}, func() error {
			st.At = st.At.UTC()
			f.States = append(f.States, st)
			return nil
		})
		if err != nil {
			return fmt.Errorf("compliance states: %w", err)
		}
		rows, err = tx.Query(ctx, fleetHubsQuery)
		if err != nil {
			return err
		}
		var h HubActivity
		var newest *time.Time
		_, err = pgx.ForEachRow(rows, []any{&h.Hub, &h.LastWrite, &newest}, func() error {
			h.LastWrite, h.NewestEvent = h.LastWrite.UTC(), time.Time{}
			if newest != nil {
				h.NewestEvent = newest.UTC()
			}
			f.Hubs = append(f.Hubs, h)
			return nil
		})
		if err != nil {
			return fmt.Errorf("hubs: %w", err)
		}
		return nil
	})
	if err != nil {
		return Fleet{}, fmt.Errorf("reading the fleet's history: %w", err)
	}
	f.ReadAt = f.ReadAt.UTC()
	return f, nil
}
