// Package rootstatus reports compliance on the hub: it aggregates the
// status of replicas into their root Policy, and the status of member
// policies into their PolicySet.
//
// Reconciler reconciles root Policies and writes their status.status (one
// entry per selected cluster, sorted by cluster, holding the compliance of
// that cluster's replica and, on a cluster a policy set's exclusion names,
// the remainingBindings that place the policy there all the same) and
// status.compliant (NonCompliant > Pending > unknown > Compliant). The selected clusters are read from the root's
// status.placement, which pkg/hub/propagator writes: the two controllers
// talk through status, and each status field has one writer. Replica
// compliance changes are coalesced for CoalesceWindow, so a burst of agent
// updates leads to one root update.
//
// PolicySetReconciler reconciles PolicySets and writes their
// status.compliant, status.placement, status.exclusions (spec.exclusions,
// sorted, as OCM writes them) and status.statusMessage, which names the
// members that are Pending, disabled, without status yet or missing, and
// ends as OCM's does when members are excluded (SomeExcluded).
// A member's compliance counts only the clusters selected through the set.
//
// Neither writes conditions or events. Both compare before writing, so a
// steady hub makes no writes. The pure cores are in status.go.
//
// Metrics: canopy_policy_compliance{namespace,policy,cluster} (0 Compliant,
// 1 NonCompliant, 2 Pending, -1 unknown) and
// canopy_policy_rollout_stopped{namespace,policy,reason} (1 for a root whose
// status.rollout stopped), both collected from the roots' status at each
// scrape, and canopy_rootstatus_reconcile_duration_seconds{controller}.
package rootstatus
