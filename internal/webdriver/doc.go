// Package webdriver is a tiny W3C WebDriver client for browser tests: it
// starts chromedriver as a child process, opens a headless Chromium session
// with a fresh profile, and offers the few commands the tests need —
// navigate, find elements and read their text, run a script, take a
// screenshot. It speaks the protocol over net/http, so it needs no module
// beyond the standard library.
//
//	drv, err := webdriver.StartDriver(ctx, webdriver.DriverPath)
//	defer drv.Stop()
//	s, err := drv.NewSession(ctx, webdriver.ChromiumOptions(profileDir))
//	defer s.Delete(ctx)
//	err = s.Navigate(ctx, "http://127.0.0.1:8080/")
//	text, err := s.Text(ctx, "#matrix td.cell")
//
// Chromium and chromedriver come from Debian's chromium and chromium-driver
// packages (/usr/bin/chromium, /usr/bin/chromedriver).
package webdriver
