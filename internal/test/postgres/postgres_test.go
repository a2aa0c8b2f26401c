package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/canopy-policy/canopy/internal/test/postgres"
)

// TestStartStop starts a server, answers a query, survives a restart, and
// refuses connections while stopped.
func TestStartStop(t *testing.T) {
	s := postgres.Start(t)
	query := func() error {
		conn, err := pgx.Connect(context.Background(), s.URL())
		if err != nil {
			return err
		}
		defer conn.Close(context.Background())
		var one int
		return conn.QueryRow(context.Background(), "SELECT 1").Scan(&one)
	}
	if err := query(); err != nil {
		t.Fatal(err)
	}
	s.Stop()
	if err := query(); err == nil {
		t.Fatal("a stopped server answered")
	}
	s.Restart()
	if err := query(); err != nil {
		t.Fatal(err)
	}
}
