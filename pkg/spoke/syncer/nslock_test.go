package syncer

import (
	"sync"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
)

// TestNamespaceLocks: holders of one namespace's lock never overlap, other
// namespaces do not wait, and no lock outlives its users.
func TestNamespaceLocks(t *testing.T) {
	g := NewWithT(t)
	var l namespaceLocks
	var inside, most atomic.Int32
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			defer l.lock("a")()
			n := inside.Add(1)
			if n > most.Load() {
				most.Store(n)
			}
			inside.Add(-1)
		})
	}
	unlockB := l.lock("b")
	unlockC := l.lock("c") // another namespace: not held up by b
	unlockC()
	unlockB()
	wg.Wait()
	g.Expect(most.Load()).To(Equal(int32(1)))
	g.Expect(l.locks).To(BeEmpty())
}
