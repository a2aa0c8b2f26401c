// Package statussync is the only writer of Policy status on a managed
// cluster, and of the status of its hub replicas.
//
// Reconciler reconciles local Policies: it reads the compliance events
// (pkg/compliance) whose involvedObject carries the Policy's UID and writes
// status.details[] (one entry per template, history newest first, at most
// HistoryLimit entries, deduplicated by event) and status.compliant
// (NonCompliant > Pending > Compliant; empty while a template has not
// reported). It needs only the managed cluster, so compliance keeps being
// recorded while the hub is unreachable.
//
// HubReconciler reconciles hub replicas: it copies status.compliant and
// status.details of the local Policy to the replica of the same name. Its
// state is the local status, so after a hub outage it sends the latest
// status, whose history holds every transition recorded meanwhile.
package statussync
