package webdriver

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// elementKey is the W3C key of an element reference in JSON.
const elementKey = "element-6066-11e4-a52e-4f735466cecf"

// Session is one browser session.
type Session struct {
	driver *Driver
	id     string
}

// ChromiumOptions are the capabilities of a headless Chromium with the
// profile in userDataDir (a fresh temporary directory), which talks to no
// network service of its own.
func ChromiumOptions(userDataDir string) map[string]any {
	return map[string]any{
		"browserName": "chrome",
		"goog:chromeOptions": map[string]any{
			"binary": ChromiumPath,
			"args": []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
				"--disable-background-networking", "--disable-component-update", "--disable-sync",
				"--window-size=1280,900", "--user-data-dir=" + userDataDir},
		},
	}
}

// NewSession opens a browser with the given capabilities (alwaysMatch).
func (d *Driver) NewSession(ctx context.Context, capabilities map[string]any) (*Session, error) {
	var created struct {
		SessionID string `json:"sessionId"`
	}
	body := map[string]any{"capabilities": map[string]any{"alwaysMatch": capabilities}}
	if err := d.do(ctx, http.MethodPost, "/session", body, &created); err != nil {
		return nil, fmt.Errorf("creating a session: %w", err)
	}
	return &Session{driver: d, id: created.SessionID}, nil
}

// Delete closes the session and its browser.
func (s *Session) Delete(ctx context.Context) error {
	return s.call(ctx, http.MethodDelete, "", nil, nil)
}

// Navigate loads url and waits for the page to load.
func (s *Session) Navigate(ctx context.Context, url string) error {
	return s.call(ctx, http.MethodPost, "/url", map[string]any{"url": url}, nil)
}

// SetWindowSize resizes the browser window.
func (s *Session) SetWindowSize(ctx context.Context, width, height int) error {
	return s.call(ctx, http.MethodPost, "/window/rect", map[string]any{"width": width, "height": height}, nil)
}

// Execute runs script (a function body; arguments in `arguments`) in the
// page and decodes its return value into result, which may be nil.
func (s *Session) Execute(ctx context.Context, result any, script string, args ...any) error {
	if args == nil {
		args = []any{}
	}
	return s.call(ctx, http.MethodPost, "/execute/sync", map[string]any{"script": script, "args": args}, result)
}

// FindAll returns the ids of the elements matching the CSS selector.
func (s *Session) FindAll(ctx context.Context, selector string) ([]string, error) {
	var found []map[string]string
	body := map[string]any{"using": "css selector", "value": selector}
	if err := s.call(ctx, http.MethodPost, "/elements", body, &found); err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(found))
	for _, e := range found {
		ids = append(ids, e[elementKey])
	}
	return ids, nil
}

// Text returns the rendered text of the first element matching the CSS
// selector.
func (s *Session) Text(ctx context.Context, selector string) (string, error) {
	var found map[string]string
	body := map[string]any{"using": "css selector", "value": selector}
	if err := s.call(ctx, http.MethodPost, "/element", body, &found); err != nil {
		return "", err
	}
	return s.ElementText(ctx, found[elementKey])
}

// ElementText returns the rendered text of an element found before.
func (s *Session) ElementText(ctx context.Context, id string) (string, error) {
	var text string
	err := s.call(ctx, http.MethodGet, "/element/"+id+"/text", nil, &text)
	return text, err
}

// Screenshot returns a PNG of the viewport.
func (s *Session) Screenshot(ctx context.Context) ([]byte, error) {
	var encoded string
	if err := s.call(ctx, http.MethodGet, "/screenshot", nil, &encoded); err != nil {
		return nil, err
	}
	png, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return nil, fmt.Errorf("decoding the screenshot: %w", err)
	}
	return png, nil
}

func (s *Session) call(ctx context.Context, method, path string, body, result any) error {
	return s.driver.do(ctx, method, "/session/"+s.id+path, body, result)
}

// Error is an error the driver answered with.
type Error struct {
	// Code is the W3C error code, e.g. "no such element".
	Code    string `json:"error"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// do sends one command and decodes the "value" of the answer into result.
func (d *Driver) do(ctx context.Context, method, path string, body, result any) error {
	var payload io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("encoding %s %s: %w", method, path, err)
		}
		payload = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, d.URL+path, payload)
	if err != nil {
		return fmt.Errorf("building %s %s: %w", method, path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := d.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	var answer struct {
		Value json.RawMessage `json:"value"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		return fmt.Errorf("decoding the answer to %s %s (%s): %w", method, path, resp.Status, err)
	}
	if resp.StatusCode != http.StatusOK {
		werr := &Error{}
		if err := json.Unmarshal(answer.Value, werr); err != nil || werr.Code == "" {
			return fmt.Errorf("%s %s: %s", method, path, resp.Status)
		}
		return fmt.Errorf("%s %s: %w", method, path, werr)
	}
	if result == nil {
		return nil
	}
	if err := json.Unmarshal(answer.Value, result); err != nil {
		return fmt.Errorf("decoding the value of %s %s: %w", method, path, err)
	}
	return nil
}
