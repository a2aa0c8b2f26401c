package testenv

import (
	"context"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

// background holds what runs in the test's process for an Env until Stop,
// such as OCM's controllers and agents.
type background struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// newBackground returns a background and its context, which outlives ctx
// (a start-up context) but keeps its logger: OCM's code logs through
// klog.FromContext, so without a logger in ctx it logs nothing.
func newBackground(ctx context.Context) (*background, context.Context) {
	logger := logr.FromContextOrDiscard(ctx)
	bctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	return &background{cancel: cancel}, bctx
}

// goRun runs fn in a goroutine; fn must return once the context ends.
func (b *background) goRun(fn func()) {
	b.wg.Go(fn)
}

// stop cancels the context and waits for every goRun to return.
func (b *background) stop() {
	b.cancel()
	b.wg.Wait()
}

// addBackground makes Stop stop bg, before the control planes.
func (e *Env) addBackground(bg *background) {
	e.bgMu.Lock()
	defer e.bgMu.Unlock()
	e.background = append(e.background, bg)
}

// stopBackground stops everything addBackground was given, at once.
func (e *Env) stopBackground() {
	e.bgMu.Lock()
	bgs := e.background
	e.background = nil
	e.bgMu.Unlock()
	var wg sync.WaitGroup
	for _, bg := range bgs {
		wg.Go(bg.stop)
	}
	wg.Wait()
}
