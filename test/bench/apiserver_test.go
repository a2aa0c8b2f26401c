package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// requests counts an API server's requests of some verbs, keyed by
// "resource" or "resource/subresource"; a request the API server refused
// (a code other than 2xx, such as a 409 for a write on a stale version) is
// keyed "resource (code)": a write counted under its resource is one that
// was made.
type requests map[string]float64

// refused sums the requests the API server refused.
func (w requests) refused() float64 {
	var sum float64
	for k, v := range w {
		if strings.HasSuffix(k, ")") {
			sum += v
		}
	}
	return sum
}

// readVerbs are the apiserver_request_total verbs that write nothing.
var readVerbs = map[string]bool{"GET": true, "LIST": true, "WATCH": true, "CONNECT": true}

// isWrite and isRead select the verbs countRequests counts: writes (every
// verb but GET, LIST, WATCH, CONNECT), and reads (GET and LIST; a watch is
// one request for its whole life).
func isWrite(verb string) bool { return !readVerbs[verb] }
func isRead(verb string) bool  { return verb == "GET" || verb == "LIST" }

// countWrites counts the API server's write requests so far.
func countWrites(ctx context.Context, cfg *rest.Config) (requests, error) {
	return countRequests(ctx, cfg, isWrite)
}

// countRequests reads apiserver_request_total from the API server's
// /metrics with the administrator's connection cfg, and sums the requests
// whose verb counts.
func countRequests(ctx context.Context, cfg *rest.Config, counts func(verb string) bool) (requests, error) {
	data, err := apiGet(ctx, cfg, "/metrics", nil, 0)
	if err != nil {
		return nil, fmt.Errorf("reading the API server's metrics: %w", err)
	}
	return parseRequests(data, counts), nil
}

// apiGet reads path (with params) from the API server of cfg as is; a
// zero timeout is the client's.
func apiGet(ctx context.Context, cfg *rest.Config, path string, params map[string]string, timeout time.Duration) ([]byte, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating a client: %w", err)
	}
	req := cs.Discovery().RESTClient().Get().AbsPath(path).Timeout(timeout)
	for k, v := range params {
		req = req.Param(k, v)
	}
	return req.DoRaw(ctx)
}

// parseRequests sums the requests of a Prometheus text exposition whose
// verb counts.
func parseRequests(data []byte, counts func(verb string) bool) requests {
	w := requests{}
	eachSample(data, func(name string, labels map[string]string, value float64) {
		if name != "apiserver_request_total" || !counts(labels["verb"]) {
			return
		}
		key := labels["resource"]
		if sub := labels["subresource"]; sub != "" {
			key += "/" + sub
		}
		if code := labels["code"]; !strings.HasPrefix(code, "2") {
			key += " (" + code + ")"
		}
		w[key] += value
	})
	return w
}

// eachSample calls f with each labelled sample of a Prometheus text
// exposition: its metric name, labels and value (lines without labels are
// left out).
func eachSample(data []byte, f func(name string, labels map[string]string, value float64)) {
	s := bufio.NewScanner(bytes.NewReader(data))
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		name, labelText, ok := strings.Cut(s.Text(), "{")
		end := strings.LastIndex(labelText, "}")
		if !ok || end < 0 {
			continue
		}
		if value, err := strconv.ParseFloat(strings.TrimSpace(labelText[end+1:]), 64); err == nil {
			f(name, parseLabels(labelText[:end]), value)
		}
	}
}

// parseLabels parses `a="x",b="y"` (values without escaped quotes).
func parseLabels(s string) map[string]string {
	labels := map[string]string{}
	for s != "" {
		key, rest, ok := strings.Cut(s, `="`)
		if !ok {
			break
		}
		value, rest, _ := strings.Cut(rest, `"`)
		labels[strings.TrimPrefix(key, ",")] = value
		s = rest
	}
	return labels
}

// minus returns w - before.
func (w requests) minus(before requests) requests {
	d := requests{}
	for k, v := range w {
		if v -= before[k]; v != 0 {
			d[k] = v
		}
	}
	return d
}

// total sums the writes whose key is one of keys, or all when keys is empty.
func (w requests) total(keys ...string) float64 {
	var sum float64
	for k, v := range w {
		if len(keys) == 0 || slices.Contains(keys, k) {
			sum += v
		}
	}
	return sum
}

// isRequest selects the verbs of requests answered once: all but WATCH
// and CONNECT, which last as long as their stream.
func isRequest(verb string) bool { return verb != "WATCH" && verb != "CONNECT" }

// requestCounter counts the requests some API servers answer from the
// moment it is made: a row's "requests" figure, which benchplot draws
// against the row's units of work.
type requestCounter struct {
	cfgs   []*rest.Config
	before []requests
}

// countFromNow starts counting the requests of the API servers of cfgs.
func countFromNow(ctx context.Context, b testing.TB, cfgs ...*rest.Config) *requestCounter {
	b.Helper()
	c := &requestCounter{cfgs: cfgs}
	for _, cfg := range cfgs {
		r, err := countRequests(ctx, cfg, isRequest)
		if err != nil {
			b.Fatal(err)
		}
		c.before = append(c.before, r)
	}
	return c
}

// metric is the "requests" figure: every request the API servers answered
// since countFromNow, the benchmark's own included.
func (c *requestCounter) metric(ctx context.Context, b testing.TB) metric {
	b.Helper()
	var sum float64
	for i, cfg := range c.cfgs {
		r, err := countRequests(ctx, cfg, isRequest)
		if err != nil {
			b.Fatal(err)
		}
		sum += r.minus(c.before[i]).total()
	}
	return metric{Name: "requests", Value: sum}
}
