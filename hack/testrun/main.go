// Command testrun is make test: it runs the test command's phases in order
// (assets, lint, verify, tests, fuzz), stops at the first that fails, and
// ends, pass or fail, with the time each phase took and the ten slowest
// packages and tests by go test's own figures. The same table is written to
// bin/test-times.txt, so a CI log and a local run can be compared.
//
// It measures; it asserts nothing about the times. docs/development.md
// keeps the figures of a cold and a warm run and the budget.
//
//	go run ./hack/testrun -go-test-flags '-timeout 45m -count=1' -fuzztime 2000x
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "Error:", err)
		}
		os.Exit(1)
	}
}

// phase is one step of make test: a command, and whether its output is go
// test -json's, whose figures are kept.
type phase struct {
	name     string
	args     []string
	packages bool
}

// phases are make test's steps in their order; pkgs are the packages go
// test runs, in the order it starts them. Each asset build does nothing
// once the machine's asset cache holds it.
func phases(goTestFlags, fuzztime string, atOnce int, pkgs []string) []phase {
	goTest := append([]string{"go", "test", "-json", "-p", strconv.Itoa(atOnce)}, strings.Fields(goTestFlags)...)
	return []phase{
		{name: "assets", args: []string{"make", "--no-print-directory", "envtest-assets", "ocm-assets", "gatekeeper-assets", "kubectl-assets", "conformance-assets"}},
		{name: "lint", args: []string{"make", "--no-print-directory", "lint"}},
		{name: "verify", args: []string{"make", "--no-print-directory", "verify"}},
		{name: "tests", args: append(goTest, pkgs...), packages: true},
		{name: "fuzz", args: []string{"make", "--no-print-directory", "fuzz", "FUZZTIME=" + fuzztime}},
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("testrun", flag.ContinueOnError)
	goTestFlags := fs.String("go-test-flags", "-count=1", "Flags of go test ./... (GO_TEST_FLAGS).")
	fuzztime := fs.String("fuzztime", "2000x", "Each fuzz target's -fuzztime (FUZZTIME).")
	report := fs.String("report", "bin/test-times.txt", "File the closing table is also written to.")
	atOnce := fs.Int("packages-at-once", runtime.GOMAXPROCS(0)+1, "How many packages go test runs at once (its -p).")
	if err := fs.Parse(args); err != nil {
		return err
	}
	pkgs, err := slowestFirst(ctx)
	if err != nil {
		return err
	}
	r := result{atOnce: *atOnce}
	runErr := runPhases(ctx, phases(*goTestFlags, *fuzztime, *atOnce, pkgs), &r, out)
	table := r.table()
	fmt.Fprint(out, "\n"+table)
	if err := writeReport(*report, table); err != nil {
		fmt.Fprintf(out, "testrun: writing %s: %v\n", *report, err)
	}
	return runErr
}

// slowFirst are the packages that take minutes in make test, slowest
// first, as the closing table of a warm run on 2 cores listed them, by
// their directory in the module. go test starts packages in the order it
// is given them, -p at a time: a long package started last would run on
// alone at the end, the other cores idle. A package missing here only
// starts later; one that no longer exists is left out.
var slowFirst = []string{
	"test/conformance",
	"test/faults",
	"test/bench",
	"pkg/hub/history",
	"test/e2e",
	"pkg/hub/propagator",
	"pkg/spoke",
	"cmd/kubectl-canopy",
	"internal/test/ocmagents",
	"pkg/spoke/templatesync",
	"test/install",
	"test/badinput",
	"pkg/spoke/configpolicy",
	"pkg/spoke/operatorpolicy",
}

// slowestFirst returns the module's packages, those of slowFirst first in
// its order, then the others in go list's order.
func slowestFirst(ctx context.Context) ([]string, error) {
	out, err := exec.CommandContext(ctx, "go", "list", "-f", "{{.ImportPath}} {{.Module.Path}}", "./...").Output()
	if err != nil {
		return nil, fmt.Errorf("listing the packages: %w", err)
	}
	return orderPackages(strings.Split(strings.TrimSpace(string(out)), "\n"), slowFirst), nil
}

// orderPackages orders go list lines ("<import path> <module path>"):
// those whose directory in the module is in first, in first's order, then
// the others in their order.
func orderPackages(lines, first []string) []string {
	rank := map[string]int{}
	for i, dir := range first {
		rank[dir] = i
	}
	type pkg struct {
		path string
		rank int
	}
	var pkgs []pkg
	for _, line := range lines {
		path, module, _ := strings.Cut(line, " ")
		r, ok := rank[strings.TrimPrefix(strings.TrimPrefix(path, module), "/")]
		if !ok {
			r = len(first)
		}
		pkgs = append(pkgs, pkg{path, r})
	}
	slices.SortStableFunc(pkgs, func(a, b pkg) int { return a.rank - b.rank })
	paths := make([]string, len(pkgs))
	for i, p := range pkgs {
		paths[i] = p.path
	}
	return paths
}

// runPhases runs each phase in turn, recording its time into r, and
// returns the first failure.
func runPhases(ctx context.Context, ps []phase, r *result, out io.Writer) error {
	for _, p := range ps {
		start := time.Now()
		err := runPhase(ctx, p, r, out)
		r.phases = append(r.phases, timing{name: p.name, took: time.Since(start), failed: err != nil})
		if err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
	}
	return nil
}

// runPhase runs one phase's command, its output passed through; for the
// tests phase, go test -json's events are turned back into go test's text
// and their times kept.
func runPhase(ctx context.Context, p phase, r *result, out io.Writer) error {
	fmt.Fprintf(out, "==> %s: %s\n", p.name, strings.Join(p.args, " "))
	cmd := exec.CommandContext(ctx, p.args[0], p.args[1:]...) //nolint:gosec // make test's own fixed commands
	cmd.Stderr = os.Stderr
	// The command's children (go test's test binaries, make's recipes)
	// are in its process group: an interrupt stops them all.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGINT) }
	cmd.WaitDelay = time.Minute
	if !p.packages {
		cmd.Stdout = out
		return cmd.Run()
	}
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	done := make(chan struct{})
	go func() {
		defer close(done)
		pkgs, tests := readEvents(pr, out)
		r.packages, r.tests = append(r.packages, pkgs...), append(r.tests, tests...)
	}()
	err := cmd.Run()
	_ = pw.Close() // the reader's end sees EOF; it never fails
	<-done
	return err
}

// timing is how long a phase, a package or a test took, and whether it
// failed.
type timing struct {
	name   string
	took   time.Duration
	failed bool
}

// event is the part of a go test -json event testrun reads.
type event struct {
	Action, Package, Test, Output string
	Elapsed                       float64
}

// packageOutput is what one package's test binary printed so far.
type packageOutput struct {
	all     strings.Builder
	summary string // "ok  \tpkg\t1.2s\n", "?   \tpkg\t[no test files]\n"
}

// reportMarker begins what a test logs (t.Log) for make test to show
// although its package passes, such as the conformance suite's counts:
// readEvents prints the rest of the line at once.
const reportMarker = "make-test-report: "

// readEvents reads go test -json's events from r to its end and returns
// each package's and each top-level test's time. It prints to out what go
// test prints without -json: a passing package's summary line alone, and
// everything a failing package printed (as -v shows it, every test's
// lines); a line that is not an event, such as a build error, as it is;
// and, from any package, what follows reportMarker in a line.
func readEvents(r io.Reader, out io.Writer) (pkgs, tests []timing) {
	outputs := map[string]*packageOutput{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			fmt.Fprintln(out, sc.Text())
			continue
		}
		if e.Package == "" { // build output, go test's own lines
			fmt.Fprint(out, e.Output)
			continue
		}
		o := outputs[e.Package]
		if o == nil {
			o = &packageOutput{}
			outputs[e.Package] = o
		}
		o.all.WriteString(e.Output)
		if _, report, ok := strings.Cut(e.Output, reportMarker); ok {
			fmt.Fprint(out, report)
		}
		if e.Test == "" && (strings.HasPrefix(e.Output, "ok ") || strings.HasPrefix(e.Output, "?")) {
			o.summary = e.Output
		}
		t := timing{name: e.Package, took: time.Duration(e.Elapsed * float64(time.Second)), failed: e.Action == "fail"}
		switch {
		case e.Test == "" && (e.Action == "pass" || e.Action == "skip"):
			fmt.Fprint(out, o.summary)
			delete(outputs, e.Package)
			if e.Action == "pass" {
				pkgs = append(pkgs, t)
			}
		case e.Test == "" && e.Action == "fail":
			fmt.Fprint(out, o.all.String())
			delete(outputs, e.Package)
			pkgs = append(pkgs, t)
		case (e.Action == "pass" || e.Action == "fail") && !strings.Contains(e.Test, "/"):
			t.name = e.Test + " (" + e.Package + ")"
			tests = append(tests, t)
		}
	}
	for _, o := range outputs { // a package that never ended: killed, or a broken stream
		fmt.Fprint(out, o.all.String())
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(out, "testrun: reading go test's output: %v\n", err)
	}
	_, _ = io.Copy(out, r) // what the scanner could not take still reaches the log, and the writer is never blocked
	return pkgs, tests
}

// result is what make test measured.
type result struct {
	phases          []timing
	packages, tests []timing
	// atOnce is go test's -p.
	atOnce int
}

// slowest is how many packages, and how many tests, the table lists.
const slowest = 10

// table is the closing report: each phase's time and the total, then the
// slowest packages.
func (r result) table() string {
	var b strings.Builder
	var total time.Duration
	fmt.Fprintf(&b, "Time per phase of make test\n")
	for _, p := range r.phases {
		total += p.took
		fmt.Fprintf(&b, "  %-8s %8s%s\n", p.name, seconds(p.took), mark(p.failed))
	}
	fmt.Fprintf(&b, "  %-8s %8s\n", "total", seconds(total))
	writeSlowest(&b, "packages", r.packages, r.atOnce)
	writeSlowest(&b, "tests", r.tests, r.atOnce)
	return b.String()
}

// writeSlowest writes the slowest of timings (packages or tests) to b,
// slowest first, with how many there were and their sum.
func writeSlowest(b *strings.Builder, what string, timings []timing, atOnce int) {
	if len(timings) == 0 {
		return
	}
	sorted := slices.Clone(timings)
	slices.SortStableFunc(sorted, func(a, b timing) int { return int(b.took - a.took) })
	var sum time.Duration
	for _, t := range sorted {
		sum += t.took
	}
	fmt.Fprintf(b, "The %d slowest of %d %s (go test's figures; %s in all, go test runs %d packages at a time)\n",
		min(slowest, len(sorted)), len(sorted), what, seconds(sum), atOnce)
	for _, t := range sorted[:min(slowest, len(sorted))] {
		fmt.Fprintf(b, "  %8s  %s%s\n", seconds(t.took), t.name, mark(t.failed))
	}
}

func seconds(d time.Duration) string { return strconv.Itoa(int(d.Round(time.Second).Seconds())) + " s" }

func mark(failed bool) string {
	if failed {
		return "  FAILED"
	}
	return ""
}

// writeReport writes the table to path, making its directory.
func writeReport(path, table string) error {
	if path == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil { //nolint:gosec // bin/, the checkout's build output
		return err
	}
	return os.WriteFile(path, []byte(table), 0o644) //nolint:gosec // a report for the developer
}
