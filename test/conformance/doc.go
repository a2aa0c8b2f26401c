// Package conformance runs OCM config-policy-controller's own end-to-end
// suite (v0.19.0's test/e2e, compiled unchanged by
// hack/install-conformance-suite.sh) against Canopy's agent: the definition
// of a correct ConfigurationPolicy controller is the one OCM's suite pins
// down.
//
// The suite sees what it would see on the kind cluster upstream runs it on:
// a managed cluster whose cluster namespace is "managed", with upstream's
// test CRDs, kube-controller-manager's namespace controller and garbage
// collector, and kubectl on the PATH. It creates its ConfigurationPolicies
// (and, for some specs, a parent Policy with its own child) directly in
// that namespace. Upstream runs its controller alone there, without OCM's
// policy framework, whose template sync would create the children from
// the parent Policies before the specs do; so the agent runs here the same
// way: its evaluators alone (inproc.RunEvaluators, in this process), with
// no hub connection and no spec, status or template sync. The specs run in
// parallel ginkgo processes, as upstream runs them.
//
// exclusions.yaml lists each spec or file that does not concern a
// controller like Canopy's, with the reason; every other spec must pass,
// and a spec that did not run (an ordered container stopped before it)
// fails the test as a failed spec does. The test prints the counts.
//
// It takes minutes: upstream's specs wait for the controller's evaluation
// interval and hold states for up to 25 seconds with Consistently.
package conformance

// SuiteVersion is the config-policy-controller release whose suite runs
// (hack/install-conformance-suite.sh's CPC_VERSION).
const SuiteVersion = "0.19.0"
