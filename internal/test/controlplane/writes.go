package controlplane

import (
	"net/http"
	"slices"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
)

// Writes records the writes (every request but GET and HEAD) sent through a
// configuration, as "METHOD path", so that a test can check what a
// controller wrote, or that it wrote nothing when nothing changed.
type Writes struct {
	mu      sync.Mutex
	entries []string
}

// RecordWrites returns a copy of cfg whose writes the returned Writes
// records.
func RecordWrites(cfg *rest.Config) (*rest.Config, *Writes) {
	w := &Writes{}
	cfg = rest.CopyConfig(cfg)
	wrap := cfg.WrapTransport
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		if wrap != nil {
			rt = wrap(rt)
		}
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			w.record(req)
			return rt.RoundTrip(req)
		})
	}
	return cfg, w
}

func (w *Writes) record(req *http.Request) {
	if req.Method == http.MethodGet || req.Method == http.MethodHead {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.entries = append(w.entries, req.Method+" "+req.URL.Path)
}

// Since returns the writes recorded after mark, and a new mark.
func (w *Writes) Since(mark int) ([]string, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.entries[mark:]), len(w.entries)
}

// Mark returns the current position of the record.
func (w *Writes) Mark() int {
	_, m := w.Since(0)
	return m
}

// Matching returns the writes after mark whose entry contains every part.
func (w *Writes) Matching(mark int, parts ...string) []string {
	all, _ := w.Since(mark)
	var out []string
	for _, e := range all {
		if containsAll(e, parts) {
			out = append(out, e)
		}
	}
	return out
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
