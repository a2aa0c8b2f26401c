package propagator

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/pkg/statuspatch"
)

// The propagator sets ConditionRolledOut on PolicySets.
//
// +kubebuilder:rbac:groups=policy.open-cluster-management.io,resources=policysets/status,verbs=get;update;patch

// ConditionRolledOut is the propagator's condition on a PolicySet with a
// rollout strategy: whether the set's policies, rolled out as a unit,
// reached every cluster the strategy lets them reach. Its reason is
// ReasonRolloutSucceeded, ReasonRolloutProgressing, or the reason the
// rollout stopped (ReasonMaxFailuresReached, ...); the message names the
// policies concerned. rootstatus writes the rest of a PolicySet's status.
const ConditionRolledOut = "RolledOut"

// Reasons of ConditionRolledOut besides the reasons a rollout stops.
const (
	// ReasonRolloutSucceeded: every policy of the set has the current spec
	// on every cluster, and none is progressing.
	ReasonRolloutSucceeded = "RolloutSucceeded"
	// ReasonRolloutProgressing: some policy of the set still waits for
	// clusters, or is not Compliant yet on the clusters it reached.
	ReasonRolloutProgressing = "RolloutProgressing"
)

// SetRolloutCondition is ConditionRolledOut of set from the status.rollout
// of the policies that roll out with it, by name (nil for a policy whose
// rollout has not been computed yet): False with the reason of the first
// policy, by name, whose rollout stopped, and its message; else False
// while one progresses; else True.
func SetRolloutCondition(set *policyv1beta1.PolicySet, rollouts map[string]*policyv1.RolloutStatus) metav1.Condition {
	c := metav1.Condition{Type: ConditionRolledOut, Status: metav1.ConditionTrue, ObservedGeneration: set.Generation,
		Reason: ReasonRolloutSucceeded, Message: "Every policy of the set has the current spec on every selected cluster."}
	var progressing, stopped []string
	for _, name := range slices.Sorted(maps.Keys(rollouts)) {
		r := rollouts[name]
		switch {
		case r != nil && r.Phase == policyv1.RolloutStopped:
			if len(stopped) == 0 {
				c.Status, c.Reason = metav1.ConditionFalse, r.Reason
				c.Message = r.Message
			}
			stopped = append(stopped, name)
		case r == nil || r.Phase != policyv1.RolloutSucceeded:
			progressing = append(progressing, name)
		}
	}
	if len(stopped) > 0 {
		c.Message = truncate(fmt.Sprintf("The rollout of the set stopped (policies stopped: %s): %s", strings.Join(stopped, ", "), c.Message))
		return c
	}
	if len(progressing) > 0 {
		c.Status, c.Reason = metav1.ConditionFalse, ReasonRolloutProgressing
		c.Message = fmt.Sprintf("The set rolls out as a unit: no cluster of a decision group gets its policies before every policy "+
			"is Compliant on the groups before it. Still rolling out: %s (their status.rollout says where each stands).",
			strings.Join(progressing, ", "))
	}
	return c
}

// updateSetConditions sets ConditionRolledOut on the PolicySets through
// which root rolls out, from root's new status.rollout and the other
// members' (as the cache has them); it writes only a changed condition.
func (r *Reconciler) updateSetConditions(ctx context.Context, root *policyv1.Policy, gated []RolloutPlacement, out *syncOutcome) {
	done := map[string]bool{}
	for _, p := range gated {
		if p.PolicySet == "" || done[p.PolicySet] {
			continue
		}
		done[p.PolicySet] = true
		rollouts := maps.Clone(p.memberRollouts)
		rollouts[root.Name] = root.Status.Rollout
		if err := r.setCondition(ctx, types.NamespacedName{Namespace: root.Namespace, Name: p.PolicySet}, rollouts); err != nil {
			out.retry = append(out.retry, err)
		}
	}
}

// setCondition patches ConditionRolledOut of the PolicySet key when it
// changed.
func (r *Reconciler) setCondition(ctx context.Context, key types.NamespacedName, rollouts map[string]*policyv1.RolloutStatus) error {
	set := &policyv1beta1.PolicySet{}
	if err := r.Client.Get(ctx, key, set); err != nil {
		return client.IgnoreNotFound(err)
	}
	if set.Spec.RolloutStrategy == nil {
		return nil // Note: the strategy comes from the set; a stale cache may not show it yet
	}
	c := SetRolloutCondition(set, rollouts)
	if old := meta.FindStatusCondition(set.Status.Conditions, ConditionRolledOut); old != nil &&
		old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message && old.ObservedGeneration == c.ObservedGeneration {
		return nil
	}
	// The condition is one field of a status rootstatus writes too: a write
	// refused as stale is sent again, with this field only, on the set read
	// from the API server, never on a successor of the same name.
	var err error
	status := statuspatch.Snapshot(r.Client, set, func(s *policyv1beta1.PolicySet) any { return s.Status },
		statuspatch.ReadFrom[*policyv1beta1.PolicySet](r.APIReader))
	meta.SetStatusCondition(&set.Status.Conditions, c)
	status.Apply(ctx, &err)
	if err != nil {
		return fmt.Errorf("setting condition %s of policy set %s: %w", ConditionRolledOut, klog.KObj(set), err)
	}
	return nil
}
