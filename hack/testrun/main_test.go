package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestReadEvents runs go test -json on a small module with a passing
// package, a failing one and one without tests, and checks what is
// printed (as go test prints without -json) and timed.
func TestReadEvents(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":            "module ex/m\n\ngo 1.26\n",
		"good/good_test.go": "package good\n\nimport \"testing\"\n\nfunc TestQuiet(t *testing.T) { t.Log(\"quiet\"); t.Log(\"make-test-report: 3 of 3 passed\") }\n\nfunc TestSub(t *testing.T) { t.Run(\"a\", func(t *testing.T) {}) }\n",
		"bad/bad_test.go":   "package bad\n\nimport \"testing\"\n\nfunc TestOK(t *testing.T) {}\n\nfunc TestBroken(t *testing.T) { t.Fatal(\"it broke\") }\n",
		"none/none.go":      "package none\n",
	}
	for name, text := range files {
		path := filepath.Join(dir, name)
		g.Expect(os.MkdirAll(filepath.Dir(path), 0o755)).To(Succeed())
		g.Expect(os.WriteFile(path, []byte(text), 0o644)).To(Succeed())
	}
	cmd := exec.CommandContext(t.Context(), "go", "test", "-json", "-count=1", "./good", "./bad", "./none")
	cmd.Dir = dir
	stream, _ := cmd.Output() // fails: ./bad fails
	g.Expect(stream).To(ContainSubstring(`"Action":"fail"`))

	var out strings.Builder
	pkgs, tests := readEvents(strings.NewReader(string(stream)+"not an event\n"), &out)
	g.Expect(out.String()).To(MatchRegexp(`(?m)^ok  \tex/m/good\t[0-9.]+s\n`))
	g.Expect(out.String()).NotTo(ContainSubstring("quiet"), "a passing package's log, as go test hides it")
	g.Expect(out.String()).To(MatchRegexp(`(?m)^3 of 3 passed$`), "a report line, shown although its package passed")
	g.Expect(out.String()).To(ContainSubstring("it broke"))
	g.Expect(out.String()).To(MatchRegexp(`(?m)^FAIL\tex/m/bad\t[0-9.]+s\n`))
	g.Expect(out.String()).To(ContainSubstring("?   \tex/m/none\t[no test files]\n"))
	g.Expect(out.String()).To(HaveSuffix("not an event\n"))

	names := func(ts []timing) map[string]bool {
		m := map[string]bool{}
		for _, t := range ts {
			m[t.name] = t.failed
		}
		return m
	}
	g.Expect(names(pkgs)).To(Equal(map[string]bool{"ex/m/good": false, "ex/m/bad": true}))
	g.Expect(names(tests)).To(Equal(map[string]bool{
		"TestQuiet (ex/m/good)": false, "TestSub (ex/m/good)": false,
		"TestOK (ex/m/bad)": false, "TestBroken (ex/m/bad)": true,
	}))
}

// TestTable checks the closing report: phases with the total, then the
// slowest packages first, at most ten, failures marked.
func TestTable(t *testing.T) {
	g := NewWithT(t)
	r := result{atOnce: 3, phases: []timing{{name: "lint", took: 90 * time.Second}, {name: "tests", took: 600 * time.Second, failed: true}}}
	for i := range 12 {
		r.packages = append(r.packages, timing{name: "p" + string(rune('a'+i)), took: time.Duration(i) * time.Second, failed: i == 11})
	}
	table := r.table()
	g.Expect(table).To(HavePrefix("Time per phase of make test\n  lint         90 s\n  tests       600 s  FAILED\n  total       690 s\n"))
	g.Expect(table).To(ContainSubstring("The 10 slowest of 12 packages (go test's figures; 66 s in all, go test runs 3 packages at a time)\n"))
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
		{name: "first", args: []string{"sh", "-c", `echo '{"Action":"output","Package":"ex/p","Output":"ok  \\tex/p\\t1.5s\\n"}'; echo '{"Action":"pass","Package":"ex/p","Elapsed":1.5}'`}, packages: true},
		{name: "second", args: []string{"false"}},
		{name: "third", args: []string{"touch", marker}},
	}
	var r result
	var out strings.Builder
	err := runPhases(context.Background(), ps, &r, &out)
	g.Expect(err).To(MatchError(HavePrefix("second: ")))
	g.Expect(out.String()).To(ContainSubstring("ok  \tex/p\t1.5s\n"))
	g.Expect(r.packages).To(Equal([]timing{{name: "ex/p", took: 1500 * time.Millisecond}}))
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

// TestOrderPackages puts the listed packages first, in the list's order,
// and keeps the others in go list's order.
func TestOrderPackages(t *testing.T) {
	g := NewWithT(t)
	lines := []string{"ex/m/a ex/m", "ex/m/test/slow ex/m", "ex/m/b ex/m", "ex/m/slower ex/m", "ex/m ex/m"}
	g.Expect(orderPackages(lines, []string{"slower", "gone", "test/slow"})).
		To(Equal([]string{"ex/m/slower", "ex/m/test/slow", "ex/m/a", "ex/m/b", "ex/m"}))
}
