package webdriver

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	. "github.com/onsi/gomega"
)

// TestSession drives a real headless Chromium against a local page. Without
// chromium and chromedriver it fails, saying how to install them.
func TestSession(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>t</title><p class="x">one</p><p class="x">two</p>`)
	}))
	defer page.Close()

	drv, err := StartDriver(ctx, DriverPath)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(drv.Stop)
	s, err := drv.NewSession(ctx, ChromiumOptions(t.TempDir()))
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = s.Delete(context.WithoutCancel(ctx)) }) // t.Context() is done when cleanups run

	g.Expect(s.Navigate(ctx, page.URL)).To(Succeed())
	g.Expect(s.Text(ctx, "p.x")).To(Equal("one"))
	ids, err := s.FindAll(ctx, "p.x")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ids).To(HaveLen(2))
	g.Expect(s.ElementText(ctx, ids[1])).To(Equal("two"))

	var sum int
	g.Expect(s.Execute(ctx, &sum, "return arguments[0] + arguments[1]", 2, 3)).To(Succeed())
	g.Expect(sum).To(Equal(5))

	_, err = s.Text(ctx, "#missing")
	g.Expect(err).To(MatchError(ContainSubstring("no such element")))

	png, err := s.Screenshot(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bytes.HasPrefix(png, []byte("\x89PNG"))).To(BeTrue())
}

func TestStartDriverMissing(t *testing.T) {
	g := NewWithT(t)
	_, err := StartDriver(t.Context(), "/nonexistent/chromedriver")
	g.Expect(err).To(MatchError(ErrMissing))
	g.Expect(err.Error()).To(ContainSubstring("apt-get install"))
}
