package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot/plotter"
)

func TestRun(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for _, scale := range []float64{0.1, 0.3, 1} {
		n := 1000 * scale
		r := report{Scale: scale, Rows: []row{
			{Stage: "linear", Unit: "replicas", Units: n, Seconds: n / 100, Extra: []metric{{Name: "hub peak RSS", Value: 50 + n/10}, {Name: "requests", Value: 3 * n}}},
			{Stage: "quadratic", Unit: "namespaces", Units: n, Seconds: n * n / 1e4},
			{Stage: "no units", Seconds: 3},
		}}
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "run.json"+string(rune('0'+len(paths))))
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	var out strings.Builder
	if err := run(&out, dir, paths); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| linear | replicas | 3 | 1.00 |", "| 1.00 |\n", "| quadratic | namespaces | 3 | 2.00 | – | – |"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("missing %q in\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "no units") {
		t.Errorf("a row without units is plotted:\n%s", out.String())
	}
	for _, f := range []string{"scaling-time.png", "scaling-memory.png", "scaling-requests.png"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	if err := run(&out, dir, paths[:1]); err == nil {
		t.Error("one run: want an error")
	}
}

func TestExponent(t *testing.T) {
	e, ok := exponent(plotter.XYs{{X: 10, Y: 5}, {X: 100, Y: 50}, {X: 1000, Y: 500}})
	if !ok || math.Abs(e-1) > 1e-9 {
		t.Errorf("exponent = %v, %v; want 1", e, ok)
	}
	if _, ok := exponent(plotter.XYs{{X: 10, Y: 5}}); ok {
		t.Error("one point: want no exponent")
	}
}
