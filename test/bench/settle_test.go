//go:build linux

package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// queueState is what a controller's work queue says at one scrape.
type queueState struct {
	reconciles float64 // controller_runtime_reconcile_total, all results
	busy       float64 // workqueue_depth + workqueue_unfinished_work_seconds
}

// queueStates reads the queue state of every controller from metrics text.
func queueStates(data []byte) map[string]queueState {
	states := map[string]queueState{}
	eachSample(data, func(name string, labels map[string]string, value float64) {
		st := states[labels["controller"]]
		switch name {
		case "controller_runtime_reconcile_total":
			st.reconciles += value
		case "workqueue_depth", "workqueue_unfinished_work_seconds":
			st.busy += value
		default:
			return
		}
		states[labels["controller"]] = st
	})
	return states
}

// waitSettled waits until each named controller of p has reconciled at
// least once and its queue has stayed empty, with no new reconcile, for
// quiet; it returns when the last reconcile was seen.
func waitSettled(ctx context.Context, p *process, quiet time.Duration, controllers ...string) (time.Time, error) {
	return waitQuiet(ctx, p, quiet, controllers, settled)
}

// waitIdle is waitSettled for controllers that may have had nothing to
// reconcile: their queues empty, with no new reconcile, for quiet.
func waitIdle(ctx context.Context, p *process, quiet time.Duration, controllers ...string) error {
	_, err := waitQuiet(ctx, p, quiet, controllers, idle)
	return err
}

// waitQuiet waits until ready holds for the named controllers of p and
// none has reconciled for quiet; it returns when the last reconcile was
// seen.
func waitQuiet(ctx context.Context, p *process, quiet time.Duration, controllers []string,
	ready func(map[string]queueState, []string) bool) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, deadline())
	defer cancel()
	var last map[string]queueState
	lastChange := time.Now()
	for {
		data, err := p.scrape(ctx)
		if err == nil {
			states := queueStates(data)
			if !sameReconciles(states, last, controllers) {
				lastChange, last = time.Now(), states
			}
			if ready(states, controllers) && time.Since(lastChange) >= quiet {
				return lastChange, nil
			}
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("controllers %v did not settle: %w", controllers, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func idle(states map[string]queueState, controllers []string) bool {
	for _, c := range controllers {
		if states[c].busy != 0 {
			return false
		}
	}
	return true
}

func sameReconciles(a, b map[string]queueState, controllers []string) bool {
	if b == nil {
		return false
	}
	for _, c := range controllers {
		if a[c].reconciles != b[c].reconciles {
			return false
		}
	}
	return true
}

func settled(states map[string]queueState, controllers []string) bool {
	for _, c := range controllers {
		if st := states[c]; st.reconciles == 0 || st.busy != 0 {
			return false
		}
	}
	return true
}

// measureRestart restarts p with nothing changed and measures the time until
// its controllers have settled and the writes of resources it made on the
// API server of cfg meanwhile (the goal is none).
func measureRestart(ctx context.Context, b testing.TB, p *process, cfg *rest.Config, stage string, resources []string, controllers ...string) row {
	b.Helper()
	// The stage before ends when its objects exist; the process may still
	// have work queued (a status that trails them). Nothing changed means
	// from an idle process (unless the caller stopped it already): else the
	// restart is charged that work.
	if p.cmd != nil {
		if err := waitIdle(ctx, p, 5*time.Second, controllers...); err != nil {
			b.Fatal(err)
		}
	}
	before, err := countWrites(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	readsBefore, err := countRequests(ctx, cfg, isRead)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := p.restart(); err != nil {
		b.Fatal(err)
	}
	settledAt, err := waitSettled(ctx, p, 5*time.Second, controllers...)
	if err != nil {
		b.Fatal(err)
	}
	after, err := countWrites(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	readsAfter, err := countRequests(ctx, cfg, isRead)
	if err != nil {
		b.Fatal(err)
	}
	d, reads := after.minus(before), readsAfter.minus(readsBefore)
	b.Logf("%s restart: writes %v, reads %v", stage, d, reads)
	return row{
		Stage:   stage + ": restart, nothing changed",
		Seconds: settledAt.Sub(start).Seconds(),
		Extra: []metric{
			{Name: "writes", Value: d.total(resources...)},
			{Name: "refused writes", Value: d.refused()},
			{Name: "reads", Value: reads.total()},
			{Name: "peak RSS", Value: p.peakRSS(), Unit: "MiB"},
		},
	}
}
