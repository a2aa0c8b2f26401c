// Command testrun is make test: it runs the test command's phases in order
// (assets, lint, verify, tests, fuzz), stops at the first that fails, and
// ends, pass or fail, with the time each phase took and the ten slowest
// packages by go test's own figures. The same table is written to
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

// phase is one step of make test: a command, and whether go test's
// per-package figures are read from its output.
type phase struct {
	name     string
	args     []string
	packages bool
}

// phases are make test's steps in their order. Each asset build does
// nothing once the machine's asset cache holds it.
func phases(goTestFlags, fuzztime string) []phase {
	return []phase{
		{name: "assets", args: []string{"make", "--no-print-directory", "envtest-assets", "ocm-assets", "gatekeeper-assets", "kubectl-assets"}},
		{name: "lint", args: []string{"make", "--no-print-directory", "lint"}},
		{name: "verify", args: []string{"make", "--no-print-directory", "verify"}},
		{name: "tests", args: append(append([]string{"go", "test"}, strings.Fields(goTestFlags)...), "./..."), packages: true},
		{name: "fuzz", args: []string{"make", "--no-print-directory", "fuzz", "FUZZTIME=" + fuzztime}},
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("testrun", flag.ContinueOnError)
	goTestFlags := fs.String("go-test-flags", "-count=1", "Flags of go test ./... (GO_TEST_FLAGS).")
	fuzztime := fs.String("fuzztime", "2000x", "Each fuzz target's -fuzztime (FUZZTIME).")
	report := fs.String("report", "bin/test-times.txt", "File the closing table is also written to.")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var r result
	runErr := runPhases(ctx, phases(*goTestFlags, *fuzztime), &r, out)
	table := r.table()
	fmt.Fprint(out, "\n"+table)
	if err := writeReport(*report, table); err != nil {
		fmt.Fprintf(out, "testrun: writing %s: %v\n", *report, err)
	}
	return runErr
}

// runPhases runs each phase in turn, recording its time into r, and
// returns the first failure.
func runPhases(ctx context.Context, ps []phase, r *result, out io.Writer) error {
	for _, p := range ps {
		start := time.Now()
		err := runPhase(ctx, p, r, out)
		r.phases = append(r.phases, phaseTime{name: p.name, took: time.Since(start), failed: err != nil})
		if err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
	}
	return nil
}

// runPhase runs one phase's command, its output passed through, and reads
// go test's package lines from it when the phase has them.
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
		r.packages = append(r.packages, readPackages(io.TeeReader(pr, out))...)
	}()
	err := cmd.Run()
	_ = pw.Close() // the reader's end sees EOF; it never fails
	<-done
	return err
}

// packageTime is one package's line of go test output.
type packageTime struct {
	name   string
	took   time.Duration
	failed bool
}

// readPackages returns the packages of go test's output lines
// ("ok  \tpkg\t12.3s", "FAIL\tpkg\t4.5s"), reading r to its end.
func readPackages(r io.Reader) []packageTime {
	var pkgs []packageTime
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), "\t")
		if len(fields) < 3 {
			continue
		}
		status := strings.TrimSpace(fields[0])
		if status != "ok" && status != "FAIL" {
			continue
		}
		secs, err := strconv.ParseFloat(strings.TrimSuffix(strings.Fields(fields[2])[0], "s"), 64)
		if err != nil {
			continue // "(cached)", "[no test files]", "[build failed]"
		}
		pkgs = append(pkgs, packageTime{name: fields[1], took: time.Duration(secs * float64(time.Second)), failed: status == "FAIL"})
	}
	_, _ = io.Copy(io.Discard, r) // a line too long for the scanner must not block the writer
	return pkgs
}

// phaseTime is the time one phase took.
type phaseTime struct {
	name   string
	took   time.Duration
	failed bool
}

// result is what make test measured.
type result struct {
	phases   []phaseTime
	packages []packageTime
}

// slowest is how many packages the table lists.
const slowest = 10

// table is the closing report: each phase's time and the total, then the
// slowest packages.
func (r result) table() string {
	var b strings.Builder
	var total time.Duration
	fmt.Fprintf(&b, "make test: time per phase\n")
	for _, p := range r.phases {
		total += p.took
		fmt.Fprintf(&b, "  %-8s %8s%s\n", p.name, seconds(p.took), mark(p.failed))
	}
	fmt.Fprintf(&b, "  %-8s %8s\n", "total", seconds(total))
	if len(r.packages) == 0 {
		return b.String()
	}
	pkgs := slices.Clone(r.packages)
	slices.SortStableFunc(pkgs, func(a, b packageTime) int { return int(b.took - a.took) })
	var sum time.Duration
	for _, p := range pkgs {
		sum += p.took
	}
	fmt.Fprintf(&b, "The %d slowest of %d packages (go test's figures; %s in all, go test runs %d at a time)\n",
		min(slowest, len(pkgs)), len(pkgs), seconds(sum), runtime.GOMAXPROCS(0))
	for _, p := range pkgs[:min(slowest, len(pkgs))] {
		fmt.Fprintf(&b, "  %8s  %s%s\n", seconds(p.took), p.name, mark(p.failed))
	}
	return b.String()
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
