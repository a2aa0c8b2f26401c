package main

import (
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

// TestParseFleetFlags: --fleet needs the dashboard and a PostgreSQL history
// database; with a SQLite file or no database the hub stops at start, with
// what to set.
func TestParseFleetFlags(t *testing.T) {
	g := NewWithT(t)
	opts, err := parseFlags(nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(opts.hub.Fleet).To(BeFalse(), "no fleet view unless asked for")

	opts, err = parseFlags([]string{"--fleet", "--dashboard-address", "127.0.0.1:8090", "--history-database", "postgres://canopy@db/history", "--hub-name", "eu-1"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(opts.hub.Fleet).To(BeTrue())

	for name, args := range map[string][]string{
		"a SQLite file": {"--fleet", "--dashboard-address", "127.0.0.1:8090", "--history-database", filepath.Join(t.TempDir(), "history.db")},
		"no database":   {"--fleet", "--dashboard-address", "127.0.0.1:8090"},
		"none":          {"--fleet", "--dashboard-address", "127.0.0.1:8090", "--history-database", "none"},
	} {
		_, err := parseFlags(args)
		g.Expect(err).To(MatchError(ContainSubstring("--fleet reads the compliance of every hub from the PostgreSQL database they all record to: set --history-database=postgres://")), name)
	}
	_, err = parseFlags([]string{"--fleet", "--history-database", "postgres://canopy@db/history"})
	g.Expect(err).To(MatchError(ContainSubstring("--fleet is a view of the dashboard: set --dashboard-address too")))
}
