// Package evaluator holds what the agent's policy template evaluators
// (configpolicy, operatorpolicy, certpolicy) share, so that each of them
// keeps only what is its own.
//
// Each evaluator package declares its Kind (the policy type, whether it
// watches what it reads, how it reads the policy). SetupWithManager calls
// Setup, which checks the clients, defaults ManagedReader, creates the
// dynamic client and dependency watcher when the evaluator watches, and
// starts the controller's builder; the Base it returns does the rest:
//
//	func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
//		return r.base.Reconcile(ctx, req, r.evaluate)
//	}
//
// Base.Reconcile holds the dependency watcher for the whole evaluation
// (see pkg/depwatch), reads the policy, forgets a deleted one (its watches
// and the compliance recorded for it), and writes the status once, after
// evaluate, when it changed, as its owner (see pkg/statuspatch): on the
// version it read, never on a same-named successor. An evaluator that reads
// through the watcher does so within the policy's query batch, started by
// Base.StartQueryBatch and ended by a deferred call, so that a panic does
// not leave it open (every later start of the batch would fail).
//
// This package is a leaf: it imports the API, other leaves and
// controller-runtime, never a controller.
package evaluator
