package history

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/canopy-policy/canopy/pkg/history"
)

// maxBatch bounds the transitions of one write.
const maxBatch = 2000

// openTimeout bounds one attempt to open the database; reopenAfter is how
// long a failed attempt answers for the next ones, so that callers do not
// queue behind one attempt after another.
const (
	openTimeout = 10 * time.Second
	reopenAfter = 2 * time.Second
)

// writeTimeout bounds one batch's write; readTimeout reading what is
// stored of every replica, and retention.
const (
	writeTimeout = time.Minute
	readTimeout  = 5 * time.Minute
)

// request is one replica's transitions and gaps, waiting to be written.
type request struct {
	transitions []history.Transition
	gaps        []history.Gap
	done        chan error
}

// writer opens the store (again and again while the database does not
// answer) and writes the requests of all reconciles in batches: whatever
// queued while the previous batch was written goes in one transaction.
// The outcome of every operation goes to health.
type writer struct {
	url    string
	queue  chan request
	health *health

	mu       sync.Mutex
	store    history.Store
	openErr  error     // the last failed attempt to open
	openedAt time.Time // when it was made
}

func newWriter(url string, h *health) *writer {
	return &writer{url: url, queue: make(chan request, 256), health: h}
}

// open returns the store, opening it first when it is not open.
func (w *writer) open(ctx context.Context) (history.Store, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.store != nil {
		return w.store, nil
	}
	if w.openErr != nil && time.Since(w.openedAt) < reopenAfter {
		return nil, w.openErr
	}
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	s, err := history.Open(ctx, w.url)
	w.health.set(opOpen, err)
	if err != nil {
		storeErrors.WithLabelValues(opOpen.String()).Inc()
		w.openErr, w.openedAt = fmt.Errorf("opening the history database: %w", err), time.Now()
		return nil, w.openErr
	}
	w.store, w.openErr = s, nil
	return s, nil
}

// write queues transitions and gaps and waits until they are written.
func (w *writer) write(ctx context.Context, transitions []history.Transition, gaps []history.Gap) error {
	req := request{transitions: transitions, gaps: gaps, done: make(chan error, 1)}
	select {
	case w.queue <- req:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run writes queued requests until ctx is cancelled, then closes the store.
func (w *writer) run(ctx context.Context) {
	defer func() {
		w.mu.Lock()
		if w.store != nil {
			_ = w.store.Close()
		}
		w.mu.Unlock()
	}()
	for {
		var batch []request
		select {
		case req := <-w.queue:
			batch = append(batch, req)
		case <-ctx.Done():
			return
		}
		rows := len(batch[0].transitions)
	drain:
		for rows < maxBatch {
			select {
			case req := <-w.queue:
				batch = append(batch, req)
				rows += len(req.transitions)
			default:
				break drain
			}
		}
		err := w.flush(ctx, batch)
		for _, req := range batch {
			req.done <- err
		}
	}
}

// flush writes one batch in one transaction.
func (w *writer) flush(ctx context.Context, batch []request) error {
	store, err := w.open(ctx)
	if err != nil {
		return err
	}
	var transitions []history.Transition
	var gaps []history.Gap
	for _, req := range batch {
		transitions = append(transitions, req.transitions...)
		gaps = append(gaps, req.gaps...)
	}
	wctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	res, err := store.Write(wctx, transitions, gaps)
	if ctx.Err() != nil {
		return ctx.Err() // the hub is stopping: not the database's fault
	}
	w.health.set(opWrite, err)
	if err != nil {
		storeErrors.WithLabelValues(opWrite.String()).Inc()
		return err
	}
	rowsWritten.Add(float64(res.Transitions))
	gapsWritten.Add(float64(res.Gaps))
	return nil
}

// prune deletes what is older than cutoff.
func (w *writer) prune(ctx context.Context, cutoff time.Time) (int, error) {
	store, err := w.open(ctx)
	if err != nil {
		return 0, err
	}
	pctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	n, err := store.Prune(pctx, cutoff)
	if ctx.Err() != nil {
		return 0, ctx.Err()
	}
	w.health.set(opPrune, err)
	if err != nil {
		storeErrors.WithLabelValues(opPrune.String()).Inc()
	}
	return n, err
}

// latestAll returns the newest event stored per template of every replica
// hub recorded.
func (w *writer) latestAll(ctx context.Context, hub string) (map[history.Replica]map[string]time.Time, error) {
	store, err := w.open(ctx)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	latest, err := store.LatestAll(rctx, hub)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	w.health.set(opRead, err)
	if err != nil {
		storeErrors.WithLabelValues(opRead.String()).Inc()
	}
	return latest, err
}

// probe checks that the database answers.
func (w *writer) probe(ctx context.Context) error {
	store, err := w.open(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	return store.Ping(ctx)
}
