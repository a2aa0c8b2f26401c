package browser

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

const page = `<!doctype html><title>t</title>
<p class="x">one</p><p class="x">two</p>
<table><tr id="row"><th>Total</th><td>7</td><td>2</td></tr></table>
<button id="b" onclick="document.getElementById('out').innerText = 'clicked'">go</button><p id="out"></p>`

// TestBrowser drives a real headless Chromium against a local page.
func TestBrowser(t *testing.T) {
	g := NewWithT(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, page)
	}))
	defer srv.Close()
	b := Start(t)
	g.Expect(processes(b.ProfileDir)).NotTo(BeEmpty(), "the browser's processes are found by its profile")

	g.Expect(b.Navigate(srv.URL)).To(Succeed())
	g.Expect(b.Text("p.x")).To(Equal("one"))
	g.Expect(b.Text("#row")).To(Equal("Total 7 2"), "table cells read as WebDriver reads them")
	g.Expect(b.Nodes("p.x")).To(HaveLen(2))
	g.Expect(b.Nodes("#missing")).To(BeEmpty())
	_, err := b.Text("#missing")
	g.Expect(err).To(MatchError(ContainSubstring("did not return any nodes")))

	var sum int
	g.Expect(b.Eval("2 + 3", &sum)).To(Succeed())
	g.Expect(sum).To(Equal(5))
	g.Expect(b.Eval("window.marker = 42", nil)).To(Succeed())
	g.Expect(b.Eval("(function () { return window.marker; })()", &sum)).To(Succeed())
	g.Expect(sum).To(Equal(42))

	g.Expect(b.Click("#b")).To(Succeed())
	g.Expect(b.Text("#out")).To(Equal("clicked"))

	png, err := b.Screenshot()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bytes.HasPrefix(png, []byte("\x89PNG"))).To(BeTrue())
}

func TestFind(t *testing.T) {
	g := NewWithT(t)
	t.Setenv("CHROMIUM", "/nonexistent/chromium")
	_, err := Find()
	g.Expect(err).To(MatchError(ContainSubstring("CHROMIUM=/nonexistent/chromium")))

	fake := filepath.Join(t.TempDir(), "chrome")
	g.Expect(os.WriteFile(fake, []byte("#!/bin/sh\n"), 0o700)).To(Succeed()) //nolint:gosec // an executable
	t.Setenv("CHROMIUM", fake)
	g.Expect(Find()).To(Equal(fake), "$CHROMIUM comes first")

	t.Setenv("CHROMIUM", "")
	t.Setenv("PATH", t.TempDir())
	old := candidates
	t.Cleanup(func() { candidates = old })
	candidates = []string{"/nonexistent/chromium", "chromium"}
	_, err = Find()
	g.Expect(err).To(MatchError(ErrNotFound))
	g.Expect(err.Error()).To(ContainSubstring("apt-get install"))
}

// TestStartWithoutChromium: a browser test without Chromium skips, saying
// what to install, or fails when $CI says this is CI.
func TestStartWithoutChromium(t *testing.T) {
	for ci, want := range map[string]string{
		"true":  "--- FAIL: TestBrowserHelper",
		"false": "--- SKIP: TestBrowserHelper",
		"":      "--- SKIP: TestBrowserHelper",
	} {
		t.Run("CI="+ci, func(t *testing.T) {
			g := NewWithT(t)
			cmd, out := helper(t, envEnd+"=pass", "CHROMIUM=/nonexistent/chromium", "CI="+ci)
			_ = cmd.Run()
			g.Expect(out.String()).To(ContainSubstring(want))
			g.Expect(out.String()).To(ContainSubstring("CHROMIUM=/nonexistent/chromium"))
		})
	}
}
