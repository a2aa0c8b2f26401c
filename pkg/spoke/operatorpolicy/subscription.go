package operatorpolicy

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const kindSubscription = "Subscription"

// handleSubscription checks (and under enforce creates, updates or
// deletes) the Subscription. It returns the Subscription the next steps
// look at: the one on the cluster, else the desired one, nil when the
// policy cannot say which.
func (e *evaluation) handleSubscription(ctx context.Context, sub *desiredSub, ogCorrect bool) (*unstructured.Unstructured, error) {
	if sub == nil {
		e.set(invalidCausingUnknownCond(kindSubscription))
		return nil, nil
	}
	found, err := e.read.get(subscriptionGVK, sub.namespace, sub.name)
	if err != nil {
		return nil, err
	}
	if e.musthave() {
		return e.musthaveSubscription(ctx, sub, found, ogCorrect)
	}
	return e.mustnothaveSubscription(ctx, sub, found)
}

func (e *evaluation) musthaveSubscription(ctx context.Context, sub *desiredSub, found *unstructured.Unstructured,
	ogCorrect bool) (*unstructured.Unstructured, error) {
	if found == nil {
		e.set(missingWantedCond(kindSubscription), missingWantedObj(sub.ref()))
		if !e.enforce() || !ogCorrect {
			return sub.object(), nil
		}
		obj := sub.object()
		// Note: marked at once, not by a second write as in OCM.
		markManaged(obj, e.policy.Namespace+"."+e.policy.Name)
		if err := e.create(ctx, obj); err != nil {
			return nil, err
		}
		e.set(createdCond(kindSubscription), createdObj(refOf(obj)))
		return obj, nil
	}
	desired := sub.object()
	if !e.enforce() {
		// Note: the policy decides installPlanApproval; inform does not check it.
		unstructured.RemoveNestedField(desired.Object, "spec", "installPlanApproval")
	}
	merged := found.DeepCopy()
	changed := mergeSpec(desired, merged, "config")
	if e.enforce() {
		changed = markManaged(merged, e.policy.Namespace+"."+e.policy.Name) || changed
	}
	if !changed {
		if failed := readSubscriptionStatus(found).ResolutionFailed; failed != nil {
			e.resolutionFailed(found, sub, failed)
			return found, nil
		}
		e.set(matchesCond(kindSubscription), matchedObj(refOf(found)))
		return found, nil
	}
	e.set(mismatchCond(kindSubscription), mismatchedObj(refOf(found)))
	if !e.enforce() {
		return found, nil
	}
	if err := e.update(ctx, merged); err != nil {
		return found, err
	}
	e.set(updatedCond(kindSubscription), updatedObj(refOf(merged)))
	return merged, nil
}

// markManaged labels and annotates sub as managed by the policy key
// ("namespace.name"), so that policies approving InstallPlans of the
// namespace find one another's Subscriptions; it reports a change.
func markManaged(sub *unstructured.Unstructured, key string) bool {
	changed := false
	if labels := sub.GetLabels(); labels == nil || !hasKey(labels, ManagedByLabel) {
		if labels == nil {
			labels = map[string]string{}
		}
		labels[ManagedByLabel] = ""
		sub.SetLabels(labels)
		changed = true
	}
	if annotations := sub.GetAnnotations(); annotations[ManagedByAnnotation] != key {
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[ManagedByAnnotation] = key
		sub.SetAnnotations(annotations)
		changed = true
	}
	return changed
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

// resolutionFailed reports OLM's failure to resolve the Subscription. A
// ConstraintsNotSatisfiable message lists every Subscription of the
// namespace and changes often: it is reported with a fixed message when it
// names this Subscription, and left aside when it does not.
//
// Note: OCM may also point the Subscription at an unreferenced CSV after a
// grace period; Canopy does not.
func (e *evaluation) resolutionFailed(found *unstructured.Unstructured, sub *desiredSub, failed *olmCondition) {
	r := refOf(found)
	if !strings.EqualFold(failed.Reason, "ConstraintsNotSatisfiable") {
		e.set(cond(kindSubscription, "False", failed.Reason, failed.Message), nonCompObj(r, failed.Reason))
		return
	}
	if !messageIncludesSubscription(sub, failed.Message) {
		if _, ok := e.policy.Status.Condition(CondSubscription); !ok {
			e.set(cond(kindSubscription, "False", failed.Reason, failed.Message), nonCompObj(r, failed.Reason))
		}
		return
	}
	e.set(subConstraintsNotSatisfiableCond, nonCompObj(r, "ConstraintsNotSatisfiable"))
}

// messageIncludesSubscription reports whether OLM's message names the
// Subscription or its package (followed by the end, a space, a comma or a
// colon, so that "a-operator" does not match "a-operator-product").
func messageIncludesSubscription(sub *desiredSub, message string) bool {
	ns, name, pkg := regexp.QuoteMeta(sub.namespace), regexp.QuoteMeta(sub.name), regexp.QuoteMeta(sub.spec.Package)
	re := fmt.Sprintf(`(?:subscription (?:%s|%s\/%s)|package (?:%s|%s\/%s))(?:$|\s|,|:)`, name, ns, name, pkg, ns, pkg)
	ok, err := regexp.MatchString(re, message)
	return ok || err != nil // when in doubt, it does
}

func (e *evaluation) mustnothaveSubscription(ctx context.Context, sub *desiredSub, found *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if found == nil {
		e.set(missingNotWantedCond(kindSubscription), missingNotWantedObj(sub.ref()))
		return sub.object(), nil
	}
	if e.policy.Spec.RemovalBehavior.ApplyDefaults().Subscriptions.IsKeep() {
		e.set(keptCond(kindSubscription), leftoverObj(refOf(found)))
		return found, nil
	}
	e.set(foundNotWantedCond(kindSubscription), foundNotWantedObj(refOf(found)))
	if !e.enforce() {
		return found, nil
	}
	if found.GetDeletionTimestamp() != nil {
		e.set(deletingCond(kindSubscription), deletingObj(refOf(found)))
		return found, nil
	}
	if err := e.remove(ctx, found); err != nil {
		return found, err
	}
	e.set(deletedCond(kindSubscription), deletedObj(sub.ref()))
	return found, nil
}
