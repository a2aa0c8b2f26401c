// Package install holds the test of docs/install.md: it takes every
// command of the page's sh blocks, in order, and runs it with kubectl
// against a hub and a managed cluster on this machine, as a person would
// on a real OCM hub, then checks the page's outcome (the policy Compliant,
// the agent the addon delivered running the image the page sets, the
// alerts and Argo CD's health checks installed).
//
// What cannot run here is listed in the test with its reason: clusteradm
// (the Go module proxy does not serve open-cluster-management.io/clusteradm,
// and `clusteradm init` and `join` install operators that need a kubelet),
// the image's build, pull and push, and krew. Where the page waits for a
// Deployment (`kubectl rollout status`), no kubelet runs it: the test runs
// the Deployment's container as a local process with its arguments,
// environment, mounted Secrets, volumes and ServiceAccount token, and waits
// for its readiness probe. A command the page gains is run; a listed
// command the page no longer has fails the test.
package install
