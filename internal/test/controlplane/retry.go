package controlplane

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Retry runs step up to attempts times, pause apart, for as long as it
// fails with an error that retryable accepts (retryable is not asked about
// the last attempt's) and ctx is not done. It returns nil at the first
// success, else the errors of every attempt.
func Retry(ctx context.Context, attempts int, pause time.Duration, retryable func(error) bool, step func() error) error {
	var errs []error
	for attempt := 1; ; attempt++ {
		err := step()
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("attempt %d: %w", attempt, err))
		if attempt == attempts || ctx.Err() != nil || !retryable(err) {
			return errors.Join(errs...)
		}
		select {
		case <-ctx.Done():
			return errors.Join(append(errs, ctx.Err())...)
		case <-time.After(pause):
		}
	}
}

// Always is the retryable of Retry that retries every error.
func Always(error) bool { return true }
