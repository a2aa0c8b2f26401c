// Package inproc runs Canopy's controllers inside a test process, wired as
// cmd/hub and cmd/agent wire them: the hub's propagator and status
// controllers, and an agent with its evaluators (ConfigurationPolicy and
// the hierarchical syncer). Suites that apply input to a real hub and
// managed cluster (test/badinput, test/security) share it.
package inproc
