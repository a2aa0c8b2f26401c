// Package faults proves that Canopy loses nothing under faults, against real
// API servers (internal/test/testenv) with the real binaries (cmd/hub and
// cmd/spoke, built by the tests) run as processes, so that a kill is a real
// SIGKILL:
//
//   - TestHubOutage: the hub's API server stops while compliance changes on
//     a managed cluster; the agent keeps enforcing, even across a SIGKILL,
//     and once the hub is back every transition is in the hub's history,
//     none lost, none repeated.
//   - TestAgentKilled: the agent is SIGKILLed 20 times at random points of a
//     large hierarchy convergence and of a dependency-ordered template sync;
//     the cluster converges, the API server's audit log
//     (testenv.Options.AuditLog) shows no deletion outside the guarantee
//     tables, and no template ever appeared while a dependency was unmet.
//   - TestHubRestarted: the hub controller is SIGKILLed and restarted while it
//     propagates many policies; it converges with no orphaned replica and,
//     once steady, a restart makes zero writes.
//   - TestRolloutUnderFaults: a pair of dependent OperatorPolicies rolls
//     out ProgressivePerGroup over four clusters in three decision groups
//     (OLM simulated), one agent's clock 5 minutes ahead and one behind,
//     the hub SIGKILLed 12 times at random points; after it, a label and
//     an ignorePending change of the root (which reach no template) roll
//     out. Each rollout succeeds long before its progressDeadline, and the
//     hub's audit log and the replicas' recorded versions show that no
//     later group's replica was written before every earlier cluster had
//     reported, Compliant, on its current spec.
//
// The default run takes a few minutes. CANOPY_SOAK=1 runs the long variant
// (more kills, larger trees, more policies). CANOPY_FAULTS_SEED=<n> replays
// the random kill points of an earlier run (each test logs its seed), and
// CANOPY_TEST_LOG=1 copies the binaries' logs to the test's output.
package faults
