package syncer

import "sync"

// namespaceLocks serialise the syncs of one namespace: a HierarchyPolicy's
// reconcile and a namespace key's reconcile both apply a namespace's
// objects, and when they ran at once (on a cold start, for every
// namespace) both created the same objects, one of them in vain
// (AlreadyExists, a write all the same). The second to come now reads what
// the first wrote (the syncer plans from the API server) and writes
// nothing.
type namespaceLocks struct {
	mu    sync.Mutex
	locks map[string]*namespaceLock
}

// namespaceLock is one namespace's lock and how many wait for it or hold it.
type namespaceLock struct {
	sync.Mutex
	users int
}

// lock locks namespace ns and returns its unlock.
func (l *namespaceLocks) lock(ns string) (unlock func()) {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[string]*namespaceLock{}
	}
	nl := l.locks[ns]
	if nl == nil {
		nl = &namespaceLock{}
		l.locks[ns] = nl
	}
	nl.users++
	l.mu.Unlock()
	nl.Lock()
	return func() {
		nl.Unlock()
		l.mu.Lock()
		if nl.users--; nl.users == 0 {
			delete(l.locks, ns)
		}
		l.mu.Unlock()
	}
}
