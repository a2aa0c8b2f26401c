package browser

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
)

// ErrNotFound says that no Chromium is installed, and how to install one.
var ErrNotFound = errors.New("no Chromium found: install Debian's chromium package " +
	"(apt-get install -y --no-install-recommends chromium) or set CHROMIUM to a Chromium or Chrome binary")

// candidates are the binaries Find tries after $CHROMIUM, in order.
var candidates = []string{"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"}

// ActionTimeout bounds each call on a Browser, so that a page that never
// answers fails the test instead of hanging it.
const ActionTimeout = 30 * time.Second

// envProfile is set, to the profile directory, in the environment of every
// process of a browser, so that processes finds those whose command line does
// not name the profile.
const envProfile = "CANOPY_BROWSER_PROFILE"

// stopTimeout bounds the graceful close, and then the wait for the killed
// processes to be gone.
const stopTimeout = 10 * time.Second

// Find returns the Chromium to start: $CHROMIUM if set, else the first of
// candidates that is an executable file.
func Find() (string, error) {
	if path := os.Getenv("CHROMIUM"); path != "" {
		found, err := exec.LookPath(path)
		if err != nil {
			return "", fmt.Errorf("CHROMIUM=%s: %w", path, err)
		}
		return found, nil
	}
	for _, name := range candidates {
		if found, err := exec.LookPath(name); err == nil {
			return found, nil
		}
	}
	return "", ErrNotFound
}

// Browser is one headless Chromium with one tab, started by Start.
type Browser struct {
	// ProfileDir is the browser's user data directory, unique to it. Each
	// process of the browser carries it on its command line or in its
	// environment, which is how the test's end finds them all.
	ProfileDir string

	ctx         context.Context // the tab's chromedp context
	cancelTab   context.CancelFunc
	cancelAlloc context.CancelFunc
}

// Start starts a headless Chromium for t with a fresh profile; opts are
// added to (and override) chromedp's defaults and this package's. The
// browser and every process it started are gone when t ends, whatever the
// outcome. Without Chromium, t is skipped, or fails when $CI is true.
func Start(t testing.TB, opts ...chromedp.ExecAllocatorOption) *Browser {
	t.Helper()
	path, err := Find()
	if err != nil {
		if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
			t.Fatalf("this browser test needs Chromium: %v", err)
		}
		t.Skipf("skipping this browser test: %v", err)
	}
	b := &Browser{ProfileDir: t.TempDir()}
	all := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(b.ProfileDir),
		chromedp.ModifyCmdFunc(tieToTest),
		chromedp.Env(envProfile+"="+b.ProfileDir), // marks the processes that lack the flag
		chromedp.NoSandbox,                        // containers and root have no usable sandbox
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.WindowSize(1280, 900),
	)
	var allocCtx context.Context
	// Note: not t.Context(): it ends before the cleanups run, and stop must
	// close the browser itself, then check that nothing is left.
	allocCtx, b.cancelAlloc = chromedp.NewExecAllocator(context.Background(), append(all, opts...)...)
	b.ctx, b.cancelTab = chromedp.NewContext(allocCtx)
	t.Cleanup(func() { b.stop(t) }) // before the start: a failed start is cleaned up too
	// Note: b.ctx itself, not Run's timeout context: the first run starts the
	// browser, which lives as long as the context it was started with.
	if err := chromedp.Run(b.ctx); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	return b
}

// stop closes the browser, kills what is left of it, and fails t if any of
// its processes outlives the wait.
func (b *Browser) stop(t testing.TB) {
	ctx, cancel := context.WithTimeout(b.ctx, stopTimeout)
	_ = chromedp.Cancel(ctx) // closes the browser gracefully, waits until it exits
	cancel()
	b.cancelTab()
	b.cancelAlloc() // kills the browser's process group if it still runs
	if left := killAll(b.ProfileDir, stopTimeout); len(left) > 0 {
		t.Errorf("Chromium processes %v of profile %s outlived the test", left, b.ProfileDir)
	}
}

// killAll kills the processes of the browser with profileDir until none is
// left or timeout passes, and returns those left.
func killAll(profileDir string, timeout time.Duration) []int {
	deadline := time.Now().Add(timeout)
	for {
		left := processes(profileDir)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		for _, pid := range left {
			kill(pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Run runs chromedp actions in the browser's tab, for what the methods
// below do not cover.
func (b *Browser) Run(actions ...chromedp.Action) error {
	ctx, cancel := context.WithTimeout(b.ctx, ActionTimeout)
	defer cancel()
	return chromedp.Run(ctx, actions...)
}

// Navigate loads url and waits for the page's load event.
func (b *Browser) Navigate(url string) error {
	return b.Run(chromedp.Navigate(url))
}

// spaces are the runs of whitespace that WebDriver's element text collapses
// within a line: innerText separates table cells with tabs.
var spaces = regexp.MustCompile(`[ \t\p{Zs}]+`)

// Text returns the rendered text of the first element matching the CSS
// selector, as WebDriver reads it: innerText, each line's whitespace
// collapsed to single spaces and trimmed, so a table row reads "Total 7 2 1".
// It does not wait: a missing element is an error now.
func (b *Browser) Text(selector string) (string, error) {
	var text string
	if err := b.Run(chromedp.Text(selector, &text, chromedp.ByQuery, chromedp.AtLeast(0))); err != nil {
		return "", err
	}
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		lines[i] = strings.TrimSpace(spaces.ReplaceAllString(line, " "))
	}
	return strings.Join(lines, "\n"), nil
}

// Nodes returns the elements matching the CSS selector, none if there are
// none. It does not wait.
func (b *Browser) Nodes(selector string) ([]*cdp.Node, error) {
	var nodes []*cdp.Node
	err := b.Run(chromedp.Nodes(selector, &nodes, chromedp.ByQueryAll, chromedp.AtLeast(0)))
	return nodes, err
}

// Click clicks the first element matching the CSS selector, waiting until
// it is visible.
func (b *Browser) Click(selector string) error {
	return b.Run(chromedp.Click(selector, chromedp.ByQuery, chromedp.NodeVisible))
}

// Eval evaluates the JavaScript expression in the page and decodes its
// value (as JSON) into result, which may be nil. A function body that
// returns a value is written as an expression: (function () { ... })().
func (b *Browser) Eval(expression string, result any) error {
	return b.Run(chromedp.Evaluate(expression, result))
}

// Screenshot returns a PNG of the viewport.
func (b *Browser) Screenshot() ([]byte, error) {
	var png []byte
	err := b.Run(chromedp.CaptureScreenshot(&png))
	return png, err
}
