package history_test

import (
	"database/sql"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/canopy-policy/canopy/pkg/history"
)

// bump sets the schema version recorded in the database at url to 2.
func bump(t *testing.T, url string) {
	t.Helper()
	const stmt = `UPDATE canopy_history_schema SET version = 2`
	if history.IsPostgres(url) {
		conn, err := pgx.Connect(t.Context(), url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(t.Context())
		if _, err := conn.Exec(t.Context(), stmt); err != nil {
			t.Fatal(err)
		}
		return
	}
	db, err := sql.Open("sqlite", "file:"+url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(stmt); err != nil {
		t.Fatal(err)
	}
}
