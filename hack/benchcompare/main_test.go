package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCompare(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, r report) string {
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	hub := func(seconds, writes float64) row {
		return row{Stage: "hub: propagation", Seconds: seconds, Ratio: seconds / 10,
			Extra: []metric{{Name: "writes/replica", Value: writes}, {Name: "hub peak RSS", Value: 400, Unit: "MiB"}}}
	}
	old1 := write("old1.json", report{Scale: 1, Rows: []row{hub(20, 1)}})
	old2 := write("old2.json", report{Scale: 1, Rows: []row{hub(22, 1)}})
	cur := write("new.json", report{Scale: 1, Rows: []row{hub(15, 2), {Stage: "syncer: cold start", Seconds: 5}}})

	var out strings.Builder
	if err := run(&out, old1+","+old2, cur); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| hub: propagation | time | 20.0 s | 15.0 s | -25.0 % | 9.5 % |",
		"| | ratio | 2.00 | 1.50 | -25.0 % | |",
		"| | writes/replica | 1 | 2 | +100.0 % | |",
		"| | hub peak RSS | 400 MiB | 400 MiB | = | |",
		"| syncer: cold start | time | – | 5.0 s | new row | – |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("missing %q in\n%s", want, out.String())
		}
	}
	if err := run(&out, "", cur); err == nil {
		t.Error("no -old: want an error")
	}
}
