package dashboard_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/canopy-policy/canopy/internal/test/browser"
	"github.com/canopy-policy/canopy/internal/test/capture"
)

// screenshot captures the browser's page as name.png (make captures).
func screenshot(t *testing.T, b *browser.Browser, name string) {
	t.Helper()
	if !capture.Enabled() {
		return
	}
	var png []byte
	if err := b.Run(chromedp.FullScreenshot(&png, 100)); err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	capture.Write(t, "dashboard-"+name+".png", png)
}

// captureJSON captures the dashboard API's answer at url as name.json
// (make captures).
func captureJSON(t *testing.T, url, name string) {
	t.Helper()
	if !capture.Enabled() {
		return
	}
	resp, err := http.Get(url) //nolint:gosec // the test's own dashboard
	if err != nil {
		t.Fatalf("capturing %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("capturing %s: %v", url, err)
	}
	capture.Write(t, "dashboard-"+name+".json", body)
}
