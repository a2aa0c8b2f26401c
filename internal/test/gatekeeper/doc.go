// Package gatekeeper runs real Gatekeeper (github.com/open-policy-agent/
// gatekeeper/v3, Version) against a test API server, for the tests of
// Canopy's Gatekeeper support: its CRDs installed, and its manager as a
// process of the test, audit-only — the operations audit, status and
// generate (which makes a ConstraintTemplate's CRD), as Gatekeeper's own
// gatekeeper-audit Deployment runs them, without the
// validating webhook (nothing here could call it), and without external
// data (its client certificate would need the webhook's certificate
// directory).
//
// hack/install-gatekeeper.sh (make gatekeeper-assets, part of make test)
// builds the manager from the Go module proxy into
// bin/gatekeeper/<Version>/manager, outside Canopy's module, and copies
// the CRDs of Gatekeeper's Helm chart beside it under crds/. The first
// build takes 15 minutes or more on two cores.
//
// There is no kubelet: the Pod Gatekeeper reads as its own (POD_NAME, the
// owner of its pod status objects) is created as an object and never runs.
// Test-only: no production package imports it.
package gatekeeper
