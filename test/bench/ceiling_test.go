//go:build linux

package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/canopy-policy/canopy/internal/scheme"
)

// plainClient is a client for cfg without client-side rate limiting, as the
// benchmark's seeding and ceilings need.
func plainClient(cfg *rest.Config) (client.Client, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = -1, 0
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, fmt.Errorf("creating a client: %w", err)
	}
	return c, nil
}

// parallel runs fn(0..n-1) on concurrency workers and returns the first error.
func parallel(ctx context.Context, n, concurrency int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		next     atomic.Int64
		firstErr error
		once     sync.Once
		wg       sync.WaitGroup
	)
	for range max(1, concurrency) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n && ctx.Err() == nil; i = int(next.Add(1)) - 1 {
				if err := fn(ctx, i); err != nil {
					once.Do(func() { firstErr = err; cancel() })
				}
			}
		})
	}
	wg.Wait()
	return firstErr
}

// createAll creates object(0..n-1) with c on concurrency workers.
func createAll(ctx context.Context, c client.Client, n, concurrency int, object func(i int) client.Object) error {
	return parallel(ctx, n, concurrency, func(ctx context.Context, i int) error {
		obj := object(i)
		if err := c.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %T %s/%s: %w", obj, obj.GetNamespace(), obj.GetName(), err)
		}
		return nil
	})
}

// ceiling is how long a plain client takes to create object(0..n-1) with
// concurrency workers: the yardstick every stage's time is divided by.
func ceiling(ctx context.Context, c client.Client, n, concurrency int, object func(i int) client.Object) (float64, error) {
	start := time.Now()
	if err := createAll(ctx, c, n, concurrency, object); err != nil {
		return 0, fmt.Errorf("measuring the ceiling: %w", err)
	}
	return since(start), nil
}
