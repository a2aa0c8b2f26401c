package ocmagents

import (
	"context"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
)

// TestStartFailsWithLogTail checks that an OCM process that exits while
// starting fails its start with the end of its log, and leaves nothing
// running.
func TestStartFailsWithLogTail(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	var wg sync.WaitGroup
	bctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); wg.Wait() }()
	p := process{name: "bad-flags", bin: "work", args: []string{"agent", "--no-such-flag"}, ready: "never"}
	err := p.run(t.Context(), bctx, wg.Go, dir)
	g.Expect(err).To(MatchError(And(
		ContainSubstring("OCM's bad-flags exited while starting (exit status 1)"),
		ContainSubstring("unknown flag: --no-such-flag"),
	)))
	g.Expect(processes(dir)).To(BeEmpty())
}
