package browser

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// Environment of the helper process TestNothingOutlivesTheTest runs: how
// the helper test ends, and the file it writes its browser's profile to.
const (
	envEnd    = "CANOPY_BROWSER_HELPER_END"
	envReport = "CANOPY_BROWSER_HELPER_REPORT"
)

// cleanedUp is what the helper logs when its browser is gone before it exits.
const cleanedUp = "no process of the browser is left"

// TestNothingOutlivesTheTest runs TestBrowserHelper in a child test binary
// that starts a browser and then passes, fails, panics or is killed, and
// checks that no process of that browser is left.
func TestNothingOutlivesTheTest(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("finds processes in /proc")
	}
	if _, err := Find(); err != nil {
		Start(t) // skips or fails, saying what to install
	}
	for _, end := range []string{"pass", "fatal", "panic", "kill"} {
		t.Run(end, func(t *testing.T) {
			g := NewWithT(t)
			profile, out := runHelper(t, end)
			g.Expect(profile).To(HavePrefix("/"), "the helper started a browser:\n%s", out)
			if end != "kill" { // the browser's cleanup ended it, not the helper's exit
				g.Expect(out).To(ContainSubstring(cleanedUp))
				g.Expect(processes(profile)).To(BeEmpty(), "helper output:\n%s", out)
				return
			}
			// The parent-death signal killed Chromium; its helpers follow.
			g.Eventually(func() []int { return processes(profile) }).WithTimeout(stopTimeout).Should(BeEmpty())
		})
	}
}

// runHelper runs TestBrowserHelper ending as end, and returns the profile
// directory of its browser and its output.
func runHelper(t *testing.T, end string) (string, string) {
	g := NewWithT(t)
	report := filepath.Join(t.TempDir(), "profile")
	cmd, out := helper(t, envEnd+"="+end, envReport+"="+report)
	g.Expect(cmd.Start()).To(Succeed())
	if end == "kill" {
		g.Eventually(func() error { _, err := os.Stat(report); return err }).WithTimeout(time.Minute).
			Should(Succeed(), "the helper started a browser")
		g.Expect(cmd.Process.Kill()).To(Succeed())
	}
	err := cmd.Wait()
	switch end {
	case "pass":
		g.Expect(err).NotTo(HaveOccurred(), out.String())
	case "fatal":
		g.Expect(out.String()).To(ContainSubstring("failing on purpose"))
	case "panic":
		g.Expect(out.String()).To(ContainSubstring("panic: panicking on purpose"))
	}
	if end != "pass" {
		g.Expect(err).To(HaveOccurred(), out.String())
	}
	profile, _ := os.ReadFile(report)
	return string(profile), out.String()
}

// helper returns a command that runs TestBrowserHelper in a child test
// binary with env added to this one's, and the buffer of its output.
func helper(t *testing.T, env ...string) (*exec.Cmd, *strings.Builder) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestBrowserHelper$", "-test.v")
	// The helper's temporary directories, its profile among them, go in
	// this test's, which is removed even when the helper is killed.
	cmd.Env = append(append(os.Environ(), "TMPDIR="+t.TempDir()), env...)
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	return cmd, out
}

// TestBrowserHelper is the child of TestNothingOutlivesTheTest: it starts a
// browser with a page open, reports its profile directory once its
// processes run, and ends as $CANOPY_BROWSER_HELPER_END says.
func TestBrowserHelper(t *testing.T) {
	end := os.Getenv(envEnd)
	if end == "" {
		t.Skip("run by TestNothingOutlivesTheTest")
	}
	g := NewWithT(t)
	var b *Browser
	t.Cleanup(func() { // runs after the browser's own cleanup
		if b != nil && len(processes(b.ProfileDir)) == 0 {
			t.Log(cleanedUp)
		}
	})
	b = Start(t)
	g.Expect(b.Navigate("data:text/html,<p>hello</p>")).To(Succeed()) // a renderer runs too
	g.Expect(processes(b.ProfileDir)).NotTo(BeEmpty())
	report := os.Getenv(envReport) // written whole, then renamed: the parent kills us once it exists
	g.Expect(os.WriteFile(report+".tmp", []byte(b.ProfileDir), 0o600)).To(Succeed())
	g.Expect(os.Rename(report+".tmp", report)).To(Succeed())
	switch end {
	case "fatal":
		t.Fatal("failing on purpose")
	case "panic":
		panic("panicking on purpose")
	case "kill":
		time.Sleep(time.Minute) // until killed
	}
}
