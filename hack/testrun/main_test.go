package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestReadPackages reads go test's package lines and nothing else.
func TestReadPackages(t *testing.T) {
	g := NewWithT(t)
	out := "=== RUN   TestX\n" +
		"ok  \tgithub.com/x/a\t12.5s\n" +
		"FAIL\tgithub.com/x/b\t3.000s\n" +
		"ok  \tgithub.com/x/c\t(cached)\n" +
		"?   \tgithub.com/x/d\t[no test files]\n" +
		"FAIL\tgithub.com/x/e [build failed]\n" +
		"ok  \tgithub.com/x/f\t0.2s\tcoverage: 50.0% of statements\n" +
		"\tok  \tnot a package line\n"
	g.Expect(readPackages(strings.NewReader(out))).To(Equal([]packageTime{
		{name: "github.com/x/a", took: 12500 * time.Millisecond},
		{name: "github.com/x/b", took: 3 * time.Second, failed: true},
		{name: "github.com/x/f", took: 200 * time.Millisecond},
	}))
}

// TestTable checks the closing report: phases with the total, then the
// slowest packages first, at most ten, failures marked.
func TestTable(t *testing.T) {
	g := NewWithT(t)
	r := result{phases: []phaseTime{{name: "lint", took: 90 * time.Second}, {name: "tests", took: 600 * time.Second, failed: true}}}
	for i := range 12 {
		r.packages = append(r.packages, packageTime{name: "p" + string(rune('a'+i)), took: time.Duration(i) * time.Second, failed: i == 11})
	}
	table := r.table()
	g.Expect(table).To(HavePrefix("make test: time per phase\n  lint         90 s\n  tests       600 s  FAILED\n  total       690 s\n"))
	g.Expect(table).To(ContainSubstring("The 10 slowest of 12 packages (go test's figures; 66 s in all"))
	g.Expect(table).To(ContainSubstring("\n      11 s  pl  FAILED\n      10 s  pk\n"))
	g.Expect(table).NotTo(ContainSubstring(" pb\n"))
	g.Expect(strings.Count(table, "\n")).To(Equal(4 + 1 + 10))
}

// TestRunStopsAtTheFirstFailure runs real commands as phases: the failing
// one ends the run, later phases never start, and the table (also
// written to the report file) says which failed.
func TestRunStopsAtTheFirstFailure(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	ps := []phase{
		{name: "first", args: []string{"sh", "-c", "printf 'ok  \\tex/p\\t1.5s\\n'"}, packages: true},
		{name: "second", args: []string{"false"}},
		{name: "third", args: []string{"touch", marker}},
	}
	var r result
	var out strings.Builder
	err := runPhases(context.Background(), ps, &r, &out)
	g.Expect(err).To(MatchError(HavePrefix("second: ")))
	g.Expect(out.String()).To(ContainSubstring("ok  \tex/p\t1.5s\n"))
	g.Expect(r.packages).To(Equal([]packageTime{{name: "ex/p", took: 1500 * time.Millisecond}}))
	g.Expect(r.phases).To(HaveLen(2))
	g.Expect(r.phases[1].failed).To(BeTrue())
	_, statErr := os.Stat(marker)
	g.Expect(os.IsNotExist(statErr)).To(BeTrue(), "a phase after the failure ran")

	report := filepath.Join(dir, "out", "times.txt")
	g.Expect(writeReport(report, r.table())).To(Succeed())
	data, err := os.ReadFile(report)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(data)).To(ContainSubstring("  second        0 s  FAILED\n"))
}
