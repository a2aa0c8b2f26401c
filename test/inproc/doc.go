// Package inproc runs Canopy's hub and agent inside a test process,
// assembled by pkg/hub and pkg/spoke exactly as cmd/hub and cmd/spoke
// assemble them (same controllers, same cache options and transforms), with
// only what a test needs changed: no metrics or probes, short intervals, and
// Stop. Suites that apply input to a real hub and managed cluster
// (test/badinput, test/security, test/e2e) and the agent controllers' tests
// that need a whole agent share it; FakeEvaluator stands in for the
// evaluators where a test decides compliance itself.
package inproc
