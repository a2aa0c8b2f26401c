// Package spoke assembles Canopy's agent on a managed cluster (the process
// canopy-agent): the managed cluster's manager with its controllers, and the
// hub connection with its own.
//
// The controllers live one package each below it: specsync (hub replica →
// local Policy), templatesync (Policy → templates, in dependency order),
// configpolicy (ConfigurationPolicy evaluation), operatorpolicy and
// certpolicy (OperatorPolicy and CertificatePolicy evaluation), gatekeeper
// (the compliance of Gatekeeper constraints and ConstraintTemplates, from
// the status Gatekeeper's audit writes), syncer
// (HierarchyPolicy), statussync (compliance events → Policy status, locally
// and on the hub), secretsync (the encryption key) and lease. Helpers only
// the spoke uses live under internal/.
//
// The hub connection (Runner) is a controller-runtime manager for the hub,
// its cache restricted to the cluster namespace, with specsync, statussync's
// HubReconciler, secretsync (with caches of its own holding only the
// encryption key) and the lease.
//
// Note: a controller-runtime manager starts no controller until every cache
// it holds has synced. Were the hub a cluster of the agent's main manager,
// an unreachable hub at start would stop all local enforcement. So the hub
// has its own manager, run by Runner as one Runnable of the main manager:
// it starts independently, and is rebuilt and retried when it fails, while
// templatesync, the evaluators and statussync keep working on the last
// synced policies.
//
// cmd/spoke, test/inproc and the e2e suite all build their agent with
// ManagerOptions and Setup, so every test runs the agent that ships. The
// package sits above the controllers; no controller imports it, so a
// controller's test that needs the whole agent is an external test package.
//
// Its tests take about a minute and a half on 2 cores: each runs the whole
// agent against a hub and a managed API server, and the outage tests stop
// and resume the hub's (TestHubRestartedMidFlow alone about a minute).
package spoke
