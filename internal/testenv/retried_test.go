package testenv

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestRetried: a step of Start is tried again after a failure, up to
// startRetries times, and a step that never succeeds reports every try.
func TestRetried(t *testing.T) {
	g := NewWithT(t)
	retryPause = time.Millisecond
	tries := 0
	flaky := func() error {
		tries++
		if tries < startRetries {
			return errors.New("etcdserver: request timed out")
		}
		return nil
	}
	g.Expect(retried(t.Context(), flaky)).To(Succeed())
	g.Expect(tries).To(Equal(startRetries))

	tries = 0
	err := retried(t.Context(), func() error { tries++; return errors.New("still down") })
	g.Expect(tries).To(Equal(startRetries))
	g.Expect(err).To(MatchError(ContainSubstring("try 1: still down")))
	g.Expect(err).To(MatchError(ContainSubstring("try 3: still down")))
}
