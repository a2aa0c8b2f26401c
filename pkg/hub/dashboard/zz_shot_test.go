package dashboard_test

import (
	"io"
	"net/http"
	"os"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/canopy-policy/canopy/internal/test/browser"
)

// temporary: screenshots for a look
func shots(t *testing.T, b *browser.Browser, name string) {
	dir := os.Getenv("SHOT_DIR")
	if dir == "" {
		return
	}
	var png []byte
	if err := b.Run(chromedp.FullScreenshot(&png, 100)); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(dir+"/"+name+".png", png, 0o600)
}

func dumpJSON(t *testing.T, url, name string) {
	dir := os.Getenv("SHOT_DIR")
	if dir == "" {
		return
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	_ = os.WriteFile(dir+"/"+name+".json", b, 0o600)
}
