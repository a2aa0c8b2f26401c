// Package hubconn runs the hub side of the agent: a controller-runtime
// manager for the hub, its cache restricted to the cluster namespace, with
// specsync, statussync's HubReconciler, secretsync (with caches of its own
// holding only the encryption key) and the lease.
//
// Note: a controller-runtime manager starts no controller until every cache
// it holds has synced. Were the hub a cluster of the agent's main manager,
// an unreachable hub at start would stop all local enforcement. So the hub
// has its own manager, run by Runner as one Runnable of the main manager:
// it starts independently, and is rebuilt and retried when it fails, while
// templatesync, the evaluators and statussync keep working on the last
// synced policies.
package hubconn
