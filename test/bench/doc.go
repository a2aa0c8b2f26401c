// Package bench measures what Canopy's users feel at fleet scale, on real
// API servers (docs/guarantees.md, "Scale"): `make bench` runs its Benchmark functions
// once each (-benchtime 1x) and prints a markdown table and a JSON file.
//
// Every stage starts its own control planes (internal/test/testenv), seeds them
// with a plain client, runs the real controllers as the built binaries
// (bin/canopy-hub, bin/canopy-agent; `make build`) so that their memory
// (/proc/<pid>/status VmHWM) and CPU (/proc/<pid>/stat) can be read, and
// reports each time beside a ceiling measured in the same run on the same
// API server: a plain client creating the same number of objects of the
// same kind with the same concurrency as the controller. API writes are
// counted from the kube-apiserver's own /metrics (apiserver_request_total).
//
// Stages (counts at BENCH_SCALE=1; BENCH_SCALE multiplies them):
//
//   - hub: 1000 managed clusters × 50 policies bound through 5 Placements;
//     time until all 50,000 replicas exist, writes per replica, time until
//     the roots reflect 50,000 replica status updates (written by the
//     benchmark, as agents would), writes after a restart with nothing
//     changed, and the hub's peak RSS.
//   - hub templates: OCM's telco reference hub, 3,500 clusters × 5
//     policies whose hub templates read the cluster's own ConfigMap on the
//     hub; time until all 17,500 replicas hold their resolved value, time
//     until all hold the new value after every ConfigMap changes (ceilings:
//     a plain client creating, then updating, the same replicas), the
//     ConfigMap reads and watches the hub made, writes after a restart with
//     nothing changed, and the hub's peak RSS.
//   - rollout: the hub stage's 1000 clusters in 10 decision groups of one
//     Placement, one root rolled out ProgressivePerGroup, with agents
//     simulated by the benchmark (each replica reported Compliant as soon
//     as it has the current spec); time from a change of the root to the
//     last group's replicas having it, beside the sum over the groups of a
//     plain client updating the group's replicas (the propagator's
//     concurrency) and then writing their reports (the agents').
//   - history: the hub stage's 50,000 replicas, each given one compliance
//     event (as agents report it) while canopy-hub records history to
//     embedded SQLite; then canopy-hub restarted on an empty PostgreSQL
//     (time until it has stored what the replicas' histories hold), and
//     one more event each. Time until every transition is in the store,
//     beside the same rows written to the same table by a plain batched
//     insert (SQLite) or one COPY (PostgreSQL), and the hub's peak RSS
//     with the store on.
//   - agent: 2,000 ConfigurationPolicies in 500 dependency chains of depth
//     4; the latency from a dependency turning Compliant to the dependant's
//     template existing and evaluated (p50, p99), and the agent's RSS and
//     CPU at idle.
//   - syncer: a HierarchyPolicy declaring 3,000 namespaces in a tree of
//     depth 4, each inheriting 10 ConfigMaps from the root; cold-start
//     convergence, and a restart with nothing changed (time and writes).
//
// Benchmarks never fail on a timing; they fail only when the system does
// not converge within a generous deadline (BENCH_DEADLINE, default 20m per
// wait). BENCH_OUT names the JSON file (default bench-results.json at the
// repository root); BENCH_PPROF names a directory that receives a CPU
// profile and a goroutine dump of each controller binary during its busiest
// phase, and the binaries' logs; BENCH_BIN
// a directory of canopy-hub and canopy-agent binaries to run instead of bin/
// (to compare two builds).
//
// In make test only TestCounts and TestHistoryCounts run, each stage at
// BENCH_SCALE 0.02: about two and a half minutes on 2 cores, most of it the
// control planes, binaries and agents each stage starts for itself, which
// keeps its request counts its own.
package bench
