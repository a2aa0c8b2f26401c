// Package depwatch runs a dependency watcher (the DynamicWatcher of
// github.com/stolostron/kubernetes-dependency-watches) for a controller,
// and solves, once, the race of its shutdown.
//
// The watcher removes every watch when it stops, but it cannot remove the
// watches of a watcher whose query batch is open, and those would outlive
// it; nor may a reconcile use the watcher while it stops (its maps are
// being emptied). So a reconcile that uses the watcher holds it:
//
//	release, err := r.watches.Hold(ctx) // waits for the watcher to start
//	if err != nil {
//		return ctrl.Result{}, err // ErrStopped: the manager is stopping
//	}
//	defer release()
//	... // StartQueryBatch, Get, List, EndQueryBatch, RemoveWatcher
//
// and the Lifecycle, run by the manager, waits for every hold to be
// released before it stops the watcher; after that, Hold fails. configpolicy,
// operatorpolicy and templatesync run their watcher this way.
//
// The watcher itself (NewWatcher) is the library's, except that a Get or
// List that needs a new watch sends its LIST and starts its WATCH before
// the library takes its one lock, within StartTimeout: the library starts
// them under the lock, which every other read and every watch event waits
// for, so one slow LIST held up the whole controller.
//
// This package is a leaf: it imports only the watcher library, client-go
// and controller-runtime.
package depwatch
