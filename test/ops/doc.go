// Package ops holds the tests of what operators install beside Canopy:
// the Argo CD health checks of deploy/argocd, run with the Lua interpreter
// Argo CD embeds against the objects a real hub and agent write; the
// Prometheus rules and the Grafana dashboard of deploy/monitoring, checked
// with promtool and against the metrics a running hub and agent export;
// and the kind path of test/e2e/kind.sh (kind builds from go.mod and takes
// the cluster configuration the script passes it).
//
// The fleet the tests read is one hub and one managed cluster, cluster1,
// running Canopy's hub and agent in the test process (test/inproc) and
// OLM's simulator on the managed cluster, with the policies of
// testdata/fleet.yaml applied once.
package ops
