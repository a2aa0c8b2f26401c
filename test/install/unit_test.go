package install

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestCommands(t *testing.T) {
	for _, tc := range []struct {
		name string
		page string
		want []command
	}{{
		name: "only sh blocks",
		page: "text\n```sh\nkubectl get ns\n```\n```yaml\nkind: X\n```\n```text\nkubectl nope\n```\n",
		want: []command{{Text: "kubectl get ns", Line: 3}},
	}, {
		name: "comments and blank lines separate commands",
		page: "```sh\n# a comment\nmake image   # builds\n\nmake test\n```\n",
		want: []command{{Text: "make image   # builds", Line: 3}, {Text: "make test", Line: 5}},
	}, {
		name: "a backslash continues the line",
		page: "```sh\nkubectl apply \\\n  -k deploy/hub\nkubectl get ns\n```\n",
		want: []command{{Text: "kubectl apply \\\n  -k deploy/hub", Line: 2}, {Text: "kubectl get ns", Line: 4}},
	}, {
		name: "a here-document belongs to its command, comments and blank lines too",
		page: "```sh\ncat > f <<'EOF'\n# kept\n\nkind: X\n```\nEOF\nkubectl get ns\n```\n",
		want: []command{{Text: "cat > f <<'EOF'\n# kept\n\nkind: X\n```\nEOF", Line: 2}, {Text: "kubectl get ns", Line: 8}},
	}, {
		name: "an unquoted delimiter ends only alone on its line",
		page: "```sh\nkubectl apply -f - <<EOF\nkind: X\n  EOF\nEOF\n```\n",
		want: []command{{Text: "kubectl apply -f - <<EOF\nkind: X\n  EOF\nEOF", Line: 2}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(commands(tc.page)).To(Equal(tc.want))
		})
	}
}

func TestCommandKey(t *testing.T) {
	g := NewWithT(t)
	for text, want := range map[string]string{
		"make image                 # OCI layout in bin/image": "make image",
		"kubectl  get   ns":                "kubectl get ns",
		"cat > f <<'EOF'\nkind: X\nEOF":    "cat > f <<'EOF'",
		`kubectl patch x -p '{"a":" # "}'`: `kubectl patch x -p '{"a":" # "}'`,
	} {
		g.Expect(command{Text: text}.key()).To(Equal(want), text)
	}
}

func TestTextBlocks(t *testing.T) {
	page := "```sh\nkubectl get ns\n```\n```text\n\nPOLICY  CLUSTER1\np       Compliant\n\n```\n```text\nmore\n```\n"
	NewWithT(t).Expect(textBlocks(page)).To(Equal([]string{"POLICY  CLUSTER1\np       Compliant", "more"}))
}

// TestRunKillsWhatACommandStarted runs a command that outlives its
// context: run returns, and the process the command started in the
// background is gone too.
func TestRunKillsWhatACommandStarted(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	h := &harness{dir: dir, environ: os.Environ()}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	_, err := h.run(ctx, command{Text: "sleep 300 & echo $! > sleep.pid; wait"})
	g.Expect(err).To(HaveOccurred())
	data, err := os.ReadFile(filepath.Join(dir, "sleep.pid"))
	g.Expect(err).NotTo(HaveOccurred())
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() error { return syscall.Kill(pid, 0) }).WithTimeout(30*time.Second).
		Should(MatchError(syscall.ESRCH), "sleep %d outlived its command", pid)
}
