//go:build linux

package bench

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/canopy-policy/canopy/internal/test/controlplane"
)

// countScale is the BENCH_SCALE TestCounts runs the stages at: a few dozen
// clusters and namespaces, enough for every count it checks to mean what
// it means at full scale.
const countScale = 0.02

// TestCounts runs the benchmark's stages at a small scale and checks the
// counts that do not depend on the machine: how many writes each unit of
// work takes, and that a restart with nothing changed writes nothing. A
// change that adds a request fails here with the count found and the
// count expected; time is never asserted (make bench measures it).
//
// The agent's writes while it converges depend on how its evaluations and
// the hub's writes interleave (make bench reports them); what is checked
// of the agent is its cascade (agent_counts_test.go): the requests of each
// dependency link, on each API server, once the link's dependency turns
// Compliant.
func TestCounts(t *testing.T) {
	useCurrentBinaries(t)
	scaleOverride = countScale
	t.Cleanup(func() { scaleOverride = 0 })

	t.Run("hub", func(t *testing.T) {
		ctx := t.Context()
		h := startHubBench(ctx, t)
		expectCount(t, h.propagate(ctx, t), "writes/replica", 1)
		expectCount(t, h.restart(ctx, t), "writes", 0)
	})
	t.Run("hub templates", func(t *testing.T) {
		ctx := t.Context()
		h := startHubTemplatesBench(ctx, t)
		expectCount(t, h.resolve(ctx, t), "writes/replica", 1)
		expectCount(t, h.change(ctx, t), "writes/replica", 1)
		expectCount(t, h.restart(ctx, t), "writes", 0)
	})
	t.Run("rollout", func(t *testing.T) {
		ctx := t.Context()
		r := startRolloutBench(ctx, t)
		r.rollOut(ctx, t, "rollout-v1")
		expectCount(t, r.change(ctx, t), "replica writes", float64(len(r.clusters)))
	})
	t.Run("agent", func(t *testing.T) {
		ctx := t.Context()
		s := startAgentBench(ctx, t)
		r := s.cascade(ctx, t)
		links := float64(r.links)
		// Each link, once its dependency is Compliant: its template created,
		// evaluated (the template's status, one Compliant event on the
		// Policy and OCM's PolicyUpdate event on the template), and its
		// Policy's status written on the managed cluster and on the hub.
		expectRequests(t, "agent cascade: writes on the managed cluster", r.managed, requests{
			"configurationpolicies":        links,
			"configurationpolicies/status": links + 1, // and the gate's evaluation, which opens the cascade
			"events":                       2*links + 1,
			"policies/status":              links,
		})
		expectRequests(t, "agent cascade: writes on the hub", r.hub, requests{"policies/status": links})
		// The evaluator reads each template from the API server once.
		expectRequests(t, "agent cascade: template reads", requests{"configurationpolicies": r.managedReads["configurationpolicies"]},
			requests{"configurationpolicies": links + 1})
	})
	t.Run("syncer", func(t *testing.T) {
		ctx := t.Context()
		s := startSyncerBench(ctx, t)
		expectCount(t, s.coldStart(ctx, t), "writes/object", 1)
		expectCount(t, s.restart(ctx, t), "writes", 0)
	})
}

// expectRequests fails t, naming each count found and expected, when the
// requests got differ from want.
func expectRequests(t *testing.T, what string, got, want requests) {
	t.Helper()
	if maps.Equal(got, want) {
		return
	}
	keys := map[string]bool{}
	for k := range got {
		keys[k] = true
	}
	for k := range want {
		keys[k] = true
	}
	var diffs []string
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if got[k] != want[k] {
			diffs = append(diffs, fmt.Sprintf("%s is %g, want %g", k, got[k], want[k]))
		}
	}
	t.Errorf("%s: %s (found %v, expected %v)", what, strings.Join(diffs, "; "), got, want)
}

// expectCount fails t when the metric name of r is not want.
func expectCount(t *testing.T, r row, name string, want float64) {
	t.Helper()
	for _, m := range r.Extra {
		if m.Name == name {
			if m.Value != want {
				t.Errorf("%s: %s is %g, want %g", r.Stage, name, m.Value, want)
			}
			return
		}
	}
	t.Errorf("%s: no metric %q in %v", r.Stage, name, r.Extra)
}

// useCurrentBinaries builds canopy-hub and canopy-agent from the tree
// being tested into a temporary directory, for the stages to run (as
// BENCH_BIN): bin/ may hold a build of another commit.
func useCurrentBinaries(t *testing.T) {
	t.Helper()
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for binary, pkg := range map[string]string{"canopy-hub": "./cmd/hub", "canopy-agent": "./cmd/spoke"} {
		cmd := exec.CommandContext(context.Background(), "go", "build", "-o", filepath.Join(dir, binary), pkg)
		cmd.Dir, cmd.Env = root, os.Environ()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", binary, err, out)
		}
	}
	t.Setenv("BENCH_BIN", dir)
}
