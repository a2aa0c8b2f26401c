// Package dashboard is the hub's read-only web page: the policies × clusters
// compliance matrix (the same content as `kubectl canopy status`) with each
// NonCompliant or Pending cell's first reason, and "excluded" with the
// set's reason where a PolicySet's exclusion keeps the policy off a
// cluster; the PolicySets; a page per policy with the state of each of its
// templates on each cluster, their Pending reasons, compliance history and
// rollout; a page per PolicySet with its members on each cluster, its
// exclusions and which member holds it back; and the dependency graph
// drawn as inline SVG, laid out by Graphviz's dot (through go-graphviz,
// Graphviz compiled to WebAssembly) so that edges go around
// the boxes and every label fits its box. The pages update live by polling
// the JSON API they are drawn from:
//
//	GET /                             the matrix, the sets and the dependency graph
//	GET /policies/{ns}/{name}         one policy
//	GET /policysets/{ns}/{name}       one PolicySet
//	GET /api/matrix                   the matrix as JSON
//	GET /api/policies/{ns}/{name}     one policy as JSON
//	GET /api/policysets/{ns}/{name}   one PolicySet as JSON
//	GET /clusters/{cluster}           one cluster's policies over time
//	GET /api/history/{policies|policysets}/{ns}/{name}   compliance transitions and gaps
//	GET /api/charts/policies/{ns}/{name}   a policy's clusters per state over time, time to remediate
//	GET /api/charts/clusters/{cluster}     a cluster's policies over time
//	GET /fleet, /api/fleet            with --fleet: every hub recording to the
//	                                  shared PostgreSQL history (fleet.go)
//
// With a history store (HistoryReader), a policy's page charts its
// compliance over time and a cluster's page the timeline of its policies,
// drawn with Chart.js, which the dashboard serves itself (static/vendor)
// from series computed here from the store's rows (cellSpans, buckets,
// remediation: pure functions).
//
// Server is a manager Runnable that runs on every hub replica (it needs no
// leader): it reads root policies and policy sets through the manager's
// cache, and the replicas, whose details and history the cache trims, with
// an uncached list by label on each page or API read. Both reads are within
// the hub's own ClusterRole, so the dashboard needs no extra RBAC.
//
// It serves GET and HEAD only and writes nothing. It answers only requests
// for localhost, an IP address or AllowedHosts, which defeats DNS rebinding
// against a port-forward. Pages are rendered with
// html/template; the script builds the live parts with textContent only. The
// Content-Security-Policy allows scripts, styles and images from the server
// itself only (no inline script or style). The assets are embedded, so the
// page needs no network beyond the hub.
package dashboard
