package history

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/canopy-policy/canopy/pkg/history"
)

// maxBatch bounds the transitions of one write.
const maxBatch = 2000

// openTimeout bounds one attempt to open the database.
const openTimeout = 10 * time.Second

// request is one replica's transitions and gaps, waiting to be written.
type request struct {
	transitions []history.Transition
	gaps        []history.Gap
	done        chan error
}

// writer opens the store (again and again while the database does not
// answer) and writes the requests of all reconciles in batches: whatever
// queued while the previous batch was written goes in one transaction.
type writer struct {
	url   string
	queue chan request

	mu    sync.Mutex
	store history.Store
}

func newWriter(url string) *writer {
	return &writer{url: url, queue: make(chan request, 256)}
}

// open returns the store, opening it first when it is not open.
func (w *writer) open(ctx context.Context) (history.Store, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.store != nil {
		return w.store, nil
	}
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	s, err := history.Open(ctx, w.url)
	if err != nil {
		storeErrors.WithLabelValues("open").Inc()
		return nil, err
	}
	w.store = s
	return s, nil
}

// fatal reports whether err from opening the store will not go away by
// waiting: a malformed URL or another schema version.
func fatal(err error) bool {
	return errors.Is(err, history.ErrSchemaVersion) || errors.Is(err, history.ErrBadURL)
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
		return fmt.Errorf("opening the history database: %w", err)
	}
	var transitions []history.Transition
	var gaps []history.Gap
	for _, req := range batch {
		transitions = append(transitions, req.transitions...)
		gaps = append(gaps, req.gaps...)
	}
	res, err := store.Write(ctx, transitions, gaps)
	if err != nil {
		storeErrors.WithLabelValues("write").Inc()
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
		return 0, fmt.Errorf("opening the history database: %w", err)
	}
	n, err := store.Prune(ctx, cutoff)
	if err != nil {
		storeErrors.WithLabelValues("prune").Inc()
	}
	return n, err
}

// latest returns the newest event stored per template of one replica.
func (w *writer) latest(ctx context.Context, hub, cluster string, policy history.Policy) (map[string]time.Time, error) {
	store, err := w.open(ctx)
	if err != nil {
		return nil, fmt.Errorf("opening the history database: %w", err)
	}
	latest, err := store.Latest(ctx, hub, cluster, policy)
	if err != nil {
		storeErrors.WithLabelValues("read").Inc()
	}
	return latest, err
}
