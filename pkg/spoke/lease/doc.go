// Package lease keeps the agent's health lease on the hub: a
// coordination.k8s.io Lease in the cluster namespace, renewed every
// Interval, so that the hub can tell the agent is alive (as OCM's addon
// lease does). It writes only that Lease.
package lease
