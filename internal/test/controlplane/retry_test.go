package controlplane

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestRetry: a failed step is tried again, up to the attempts given; a
// step that never succeeds reports every attempt; an error retryable
// refuses ends the attempts at once.
func TestRetry(t *testing.T) {
	g := NewWithT(t)
	tries := 0
	flaky := func() error {
		tries++
		if tries < 3 {
			return errors.New("etcdserver: request timed out")
		}
		return nil
	}
	g.Expect(Retry(t.Context(), 3, time.Millisecond, Always, flaky)).To(Succeed())
	g.Expect(tries).To(Equal(3))

	tries = 0
	err := Retry(t.Context(), 3, time.Millisecond, Always, func() error { tries++; return errors.New("still down") })
	g.Expect(tries).To(Equal(3))
	g.Expect(err).To(MatchError(ContainSubstring("attempt 1: still down")))
	g.Expect(err).To(MatchError(ContainSubstring("attempt 3: still down")))

	tries = 0
	permanent := errors.New("binary not found")
	err = Retry(t.Context(), 3, time.Millisecond, func(err error) bool { return !errors.Is(err, permanent) },
		func() error { tries++; return permanent })
	g.Expect(tries).To(Equal(1))
	g.Expect(err).To(MatchError(permanent))
}
