// Command benchcompare prints how each row of a `make bench` run changed
// from an earlier one: the time, the ratio to the ceiling and every extra
// figure, old → new with the change in percent.
//
//	go run ./hack/benchcompare -old before.json[,before2.json...] -new after.json
//
// Given several old runs (of the same build), it also prints each row's
// run-to-run spread among them, (max − min) / mean of the time: a change
// smaller than the spread is noise. `make bench-compare OLD=... NEW=...`
// runs it.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// report is the part of bench-results.json (test/bench's report) read here.
type report struct {
	Scale float64 `json:"scale"`
	Rows  []row   `json:"rows"`
}

// row is one measured stage of a report.
type row struct {
	Stage   string   `json:"stage"`
	Scale   string   `json:"scale"`
	Seconds float64  `json:"seconds"`
	Ratio   float64  `json:"ratio,omitempty"`
	Extra   []metric `json:"extra,omitempty"`
}

// metric is an extra figure of a row.
type metric struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit,omitempty"`
}

func main() {
	oldPaths := flag.String("old", "", "the earlier run's bench-results.json; several runs of one build, comma-separated, give the spread")
	newPath := flag.String("new", "", "the later run's bench-results.json")
	flag.Parse()
	if err := run(os.Stdout, *oldPaths, *newPath); err != nil {
		fmt.Fprintln(os.Stderr, "benchcompare:", err)
		os.Exit(1)
	}
}

// run compares the runs at oldPaths (comma-separated) with the run at
// newPath and writes the table to w.
func run(w io.Writer, oldPaths, newPath string) error {
	if oldPaths == "" || newPath == "" {
		return errors.New("both -old and -new are required")
	}
	var olds []report
	for _, p := range strings.Split(oldPaths, ",") {
		r, err := read(p)
		if err != nil {
			return err
		}
		olds = append(olds, r)
	}
	cur, err := read(newPath)
	if err != nil {
		return err
	}
	if cur.Scale != olds[0].Scale {
		fmt.Fprintf(w, "Note: the runs were made at different scales (old %g, new %g).\n\n", olds[0].Scale, cur.Scale)
	}
	compare(w, olds, cur)
	return nil
}

// read decodes the report at path.
func read(path string) (report, error) {
	data, err := os.ReadFile(path) //nolint:gosec // a path the user names
	if err != nil {
		return report{}, err
	}
	var r report
	if err := json.Unmarshal(data, &r); err != nil {
		return report{}, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// compare writes one line per row of cur, and one per extra figure, with
// the first of olds as the baseline and the spread of olds' times.
func compare(w io.Writer, olds []report, cur report) {
	fmt.Fprintln(w, "| stage | figure | old | new | change | spread of old runs |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|")
	for _, n := range cur.Rows {
		o, ok := find(olds[0], n.Stage)
		if !ok {
			fmt.Fprintf(w, "| %s | time | – | %.1f s | new row | – |\n", n.Stage, n.Seconds)
			continue
		}
		fmt.Fprintf(w, "| %s | time | %.1f s | %.1f s | %s | %s |\n", n.Stage, o.Seconds, n.Seconds, change(o.Seconds, n.Seconds), spread(olds, n.Stage))
		if n.Ratio > 0 || o.Ratio > 0 {
			fmt.Fprintf(w, "| | ratio | %.2f | %.2f | %s | |\n", o.Ratio, n.Ratio, change(o.Ratio, n.Ratio))
		}
		for _, m := range n.Extra {
			i := slices.IndexFunc(o.Extra, func(x metric) bool { return x.Name == m.Name })
			if i < 0 {
				fmt.Fprintf(w, "| | %s | – | %s | new | |\n", m.Name, value(m.Value, m.Unit))
				continue
			}
			fmt.Fprintf(w, "| | %s | %s | %s | %s | |\n", m.Name, value(o.Extra[i].Value, m.Unit), value(m.Value, m.Unit), change(o.Extra[i].Value, m.Value))
		}
	}
}

// find returns the row of r named stage.
func find(r report, stage string) (row, bool) {
	i := slices.IndexFunc(r.Rows, func(x row) bool { return x.Stage == stage })
	if i < 0 {
		return row{}, false
	}
	return r.Rows[i], true
}

// change is new against old in percent, signed; "=" when equal.
func change(old, cur float64) string {
	switch old {
	case cur:
		return "="
	case 0:
		return "from 0"
	}
	return fmt.Sprintf("%+.1f %%", (cur-old)/old*100)
}

// spread is (max − min) / mean of the time of stage over runs, in percent;
// "–" with fewer than two runs holding the stage.
func spread(runs []report, stage string) string {
	var times []float64
	for _, r := range runs {
		if x, ok := find(r, stage); ok {
			times = append(times, x.Seconds)
		}
	}
	if len(times) < 2 {
		return "–"
	}
	var sum float64
	for _, t := range times {
		sum += t
	}
	mean := sum / float64(len(times))
	if mean == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f %%", (slices.Max(times)-slices.Min(times))/mean*100)
}

// value formats v with its unit.
func value(v float64, unit string) string {
	if unit == "" {
		return fmt.Sprintf("%.3g", v)
	}
	return fmt.Sprintf("%.3g %s", v, unit)
}
