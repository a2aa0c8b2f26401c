// Package browser starts a headless Chromium for a browser test and drives it
// through github.com/chromedp/chromedp, which speaks the DevTools protocol to
// Chromium directly (no chromedriver). It is test-only: no production package
// imports it.
//
//	b := browser.Start(t) // skips without Chromium, fails when CI is set
//	err := b.Navigate("http://127.0.0.1:8080/")
//	text, err := b.Text("#matrix tfoot")
//
// Every process the browser starts is gone when the test ends: on success, on
// t.Fatal and on panic (the test's cleanup kills them), and when the test
// binary itself is killed (Chromium gets the parent-death signal; its helper
// processes exit when it does). TestNothingOutlivesTheTest proves it.
//
// Chromium is the CHROMIUM environment variable's binary, else Debian's
// /usr/bin/chromium (apt-get install chromium), else chromium,
// chromium-browser or google-chrome on PATH.
package browser
