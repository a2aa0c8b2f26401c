package controlplane

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

// TestStartRetriesAFailedStart starts a control plane whose etcd exits at
// once, as when another process took its port, for as many launches as
// envtest's own retries make: the start succeeds on a new attempt, with new
// ports, and a start that never succeeds says why in etcd's own words.
func TestStartRetriesAFailedStart(t *testing.T) {
	g := NewWithT(t)
	etcd, err := BinaryPath("etcd")
	g.Expect(err).NotTo(HaveOccurred())
	dir := t.TempDir()
	flaky := func(failures int) string {
		script := filepath.Join(dir, fmt.Sprintf("etcd-failing-%d", failures))
		launches := script + ".launches"
		g.Expect(os.WriteFile(script, fmt.Appendf(nil, `#!/bin/sh
if [ "$1" = --help ]; then exec %[3]q "$@"; fi # envtest reads etcd's flags first
echo launch >> %[1]q
if [ "$(wc -l < %[1]q)" -le %[2]d ]; then
	echo "listen tcp 127.0.0.1:2379: bind: address already in use" >&2
	exit 1
fi
exec %[3]q "$@"
`, launches, failures, etcd), 0o755)).To(Succeed()) //nolint:gosec // an executable script
		return script
	}

	t.Setenv("TEST_ASSET_ETCD", flaky(5)) // envtest launches etcd 5 times per attempt
	cp, err := Start(t.Context(), "retried")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cp.Stop()).To(Succeed())

	t.Setenv("TEST_ASSET_ETCD", flaky(5*startAttempts))
	_, err = Start(t.Context(), "failing")
	g.Expect(err).To(MatchError(ContainSubstring("bind: address already in use")))
	g.Expect(err).To(MatchError(ContainSubstring(fmt.Sprintf("attempt %d: ", startAttempts))))
}
