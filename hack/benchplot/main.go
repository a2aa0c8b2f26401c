// Command benchplot draws how each `make bench` stage scales: given the
// bench-results.json of runs at several BENCH_SCALEs, it plots each
// stage's time, its process's peak memory and the API requests it caused
// (the row's "requests" figure) against the units of work
// (replicas, policies, namespaces, clusters), on log-log axes, and prints
// the exponent of the power law fitted to each (1 is linear; above 1 grows
// faster than the work).
//
//	go run ./hack/benchplot -out docs/captures run-0.1.json run-0.3.json run-1.json
//
// `make bench-scale` runs the benchmarks at 0.1, 0.3 and 1 and then this.
package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// report is the part of bench-results.json read here.
type report struct {
	Scale float64 `json:"scale"`
	Rows  []row   `json:"rows"`
}

// row is one measured stage of a report.
type row struct {
	Stage   string   `json:"stage"`
	Units   float64  `json:"units"`
	Unit    string   `json:"unit"`
	Seconds float64  `json:"seconds"`
	Extra   []metric `json:"extra"`
}

// metric is an extra figure of a row.
type metric struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
}

// figure is what is plotted against the units of work.
type figure struct {
	name, file, axis string
	of               func(row) (float64, bool)
}

var figures = []figure{
	{name: "time", file: "scaling-time.png", axis: "seconds", of: func(r row) (float64, bool) { return r.Seconds, r.Seconds > 0 }},
	{name: "peak memory", file: "scaling-memory.png", axis: "peak RSS (MiB)", of: peakRSS},
	{name: "requests", file: "scaling-requests.png", axis: "API requests", of: extra("requests")},
}

// extra reads the figure of a row's extra metric called name.
func extra(name string) func(row) (float64, bool) {
	return metricWhere(func(n string) bool { return n == name })
}

// peakRSS is the peak RSS a row reports for its process.
var peakRSS = metricWhere(func(n string) bool { return strings.HasSuffix(n, "peak RSS") })

// metricWhere reads the first positive extra metric of a row whose name
// matches.
func metricWhere(matches func(name string) bool) func(row) (float64, bool) {
	return func(r row) (float64, bool) {
		for _, m := range r.Extra {
			if matches(m.Name) && m.Value > 0 {
				return m.Value, true
			}
		}
		return 0, false
	}
}

func main() {
	out := flag.String("out", ".", "directory for the charts")
	flag.Parse()
	if err := run(os.Stdout, *out, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "benchplot:", err)
		os.Exit(1)
	}
}

// run reads the reports at paths, writes the charts to dir and the
// exponents to w.
func run(w io.Writer, dir string, paths []string) error {
	if len(paths) < 2 {
		return errors.New("give the results of at least two runs at different scales")
	}
	var reports []report
	for _, p := range paths {
		data, err := os.ReadFile(p) //nolint:gosec // a path the user names
		if err != nil {
			return err
		}
		var r report
		if err := json.Unmarshal(data, &r); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		reports = append(reports, r)
	}
	stages := curves(reports)
	fmt.Fprint(w, "| stage | unit | points |")
	for _, f := range figures {
		fmt.Fprintf(w, " %s exponent |", f.name)
	}
	fmt.Fprint(w, "\n|---|---|---:|", strings.Repeat("---:|", len(figures)), "\n")
	for _, s := range stages {
		fmt.Fprintf(w, "| %s | %s | %d |", s.stage, s.unit, len(s.rows))
		for _, f := range figures {
			fmt.Fprintf(w, " %s |", exponentText(s, f))
		}
		fmt.Fprintln(w)
	}
	for _, f := range figures {
		if err := draw(filepath.Join(dir, f.file), f, stages); err != nil {
			return err
		}
	}
	return nil
}

// curve is one stage's rows across the runs, by units of work.
type curve struct {
	stage, unit string
	rows        []row
}

// curves groups the rows of reports by stage, in the order they first
// appear, each sorted by units; rows without units are left out.
func curves(reports []report) []curve {
	var out []curve
	for _, r := range reports {
		for _, x := range r.Rows {
			if x.Units <= 0 {
				continue
			}
			i := slices.IndexFunc(out, func(c curve) bool { return c.stage == x.Stage })
			if i < 0 {
				out = append(out, curve{stage: x.Stage, unit: x.Unit})
				i = len(out) - 1
			}
			out[i].rows = append(out[i].rows, x)
		}
	}
	for _, c := range out {
		slices.SortFunc(c.rows, func(a, b row) int { return cmp.Compare(a.Units, b.Units) })
	}
	return out
}

// points are the (units, figure) points of c that have the figure.
func points(c curve, f figure) plotter.XYs {
	var xys plotter.XYs
	for _, r := range c.rows {
		if y, ok := f.of(r); ok {
			xys = append(xys, plotter.XY{X: r.Units, Y: y})
		}
	}
	return xys
}

// exponent is the slope of the least-squares line through the points in
// log-log space: y ∝ x^exponent. ok is false with fewer than two distinct x.
func exponent(xys plotter.XYs) (float64, bool) {
	n := float64(len(xys))
	var sx, sy, sxx, sxy float64
	for _, p := range xys {
		lx, ly := math.Log(p.X), math.Log(p.Y)
		sx, sy, sxx, sxy = sx+lx, sy+ly, sxx+lx*lx, sxy+lx*ly
	}
	den := n*sxx - sx*sx
	if n < 2 || den == 0 {
		return 0, false
	}
	return (n*sxy - sx*sy) / den, true
}

// exponentText is the exponent of c's figure f, or "–".
func exponentText(c curve, f figure) string {
	if e, ok := exponent(points(c, f)); ok {
		return fmt.Sprintf("%.2f", e)
	}
	return "–"
}

// draw writes the chart of figure f for every stage to path.
func draw(path string, f figure, stages []curve) error {
	p := plot.New()
	p.Title.Text = "make bench: " + f.name + " against the units of work"
	p.X.Label.Text = "units of work (replicas, policies, namespaces, clusters)"
	p.Y.Label.Text = f.axis
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, true
	var args []any
	for _, s := range stages {
		xys := points(s, f)
		if len(xys) == 0 {
			continue
		}
		label := s.stage
		if e, ok := exponent(xys); ok {
			label = fmt.Sprintf("%s (exponent %.2f)", s.stage, e)
		}
		args = append(args, label, xys)
	}
	if len(args) == 0 {
		return nil
	}
	if err := plotutil.AddLinePoints(p, args...); err != nil {
		return fmt.Errorf("%s: %w", f.name, err)
	}
	if err := p.Save(11*vg.Inch, 7*vg.Inch, path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
