// Package lease keeps the agent's health leases: coordination.k8s.io Leases
// named after the addon, renewed every Interval. One is in the cluster
// namespace on the hub, so that the hub can tell the agent is alive; the
// other is in the agent's install namespace on the managed cluster, where
// OCM's klusterlet reads it to set the ManagedClusterAddOn's Available
// condition. It writes only those Leases.
//
// Metric: canopy_agent_lease_renew_timestamp_seconds{namespace,lease}, the
// Unix time of each Lease's last successful renewal.
package lease
