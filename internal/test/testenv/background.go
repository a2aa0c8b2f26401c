package testenv

import (
	"context"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

// background holds what runs for an Env until Stop, such as the goroutines
// that supervise OCM's agents (internal/test/ocmagents).
type background struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Background lets code outside this package, such as
// internal/test/ocmagents, run something (a goroutine, or a process it
// supervises) for as long as the Env runs. It returns a context that ends when Stop begins (or
// at once if Stop already ran) and a goRun that runs fn in a goroutine Stop
// waits for, before it stops the control planes; fn must return once bctx
// ends. bctx outlives ctx, a start-up context, but keeps its logger.
func (e *Env) Background(ctx context.Context) (bctx context.Context, goRun func(fn func())) {
	logger := logr.FromContextOrDiscard(ctx)
	bctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	bg := &background{cancel: cancel}
	e.bgMu.Lock()
	defer e.bgMu.Unlock()
	if e.bgStopped {
		cancel()
	} else {
		e.background = append(e.background, bg)
	}
	return bctx, bg.wg.Go
}

// stop cancels the context and waits for every goRun to return.
func (b *background) stop() {
	b.cancel()
	b.wg.Wait()
}

// stopBackground stops everything Background started, at once.
func (e *Env) stopBackground() {
	e.bgMu.Lock()
	bgs := e.background
	e.background, e.bgStopped = nil, true
	e.bgMu.Unlock()
	var wg sync.WaitGroup
	for _, bg := range bgs {
		wg.Go(bg.stop)
	}
	wg.Wait()
}
