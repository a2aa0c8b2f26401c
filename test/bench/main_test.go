package bench

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
)

// results collects the rows of every benchmark run by this process; TestMain
// prints them once all benchmarks have run.
var results = &report{}

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard()) // envtest logs through controller-runtime
	results.Machine = describeMachine()
	results.Scale = scale()
	code := m.Run()
	if len(results.Rows) > 0 {
		if err := results.write(os.Stdout, outPath()); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// scaleOverride, when above 0, is the scale instead of BENCH_SCALE (set by
// TestCounts while it runs).
var scaleOverride float64

// scale is BENCH_SCALE, the factor applied to every count (default 1).
func scale() float64 {
	if scaleOverride > 0 {
		return scaleOverride
	}
	s, err := strconv.ParseFloat(os.Getenv("BENCH_SCALE"), 64)
	if err != nil || s <= 0 {
		return 1
	}
	return s
}

// scaled is n times BENCH_SCALE, at least one.
func scaled(n int) int {
	return max(1, int(math.Round(float64(n)*scale())))
}

// deadline bounds each wait for convergence: BENCH_DEADLINE or 20 minutes.
func deadline() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("BENCH_DEADLINE")); err == nil && d > 0 {
		return d
	}
	return 20 * time.Minute
}
