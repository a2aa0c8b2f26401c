// Package hub assembles Canopy's hub: the one list of its controllers
// (propagator, root and PolicySet status, and optionally the OCM addon
// manager and the dashboard) and the cache options they rely on.
//
// cmd/hub, test/inproc, the e2e suite and the hub controllers' suites all
// build their hub from here, so every test runs the hub that ships. The
// package sits above the controllers (pkg/hub/<controller>) and below cmd
// and test; no controller imports it.
package hub
