package operatorpolicy

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/compare"
)

const kindOpGroup = "OperatorGroup"

// handleOpGroup checks (and under enforce creates, updates or deletes) the
// OperatorGroup of the Subscription's namespace, and reports whether it is
// right for the Subscription to be created.
func (e *evaluation) handleOpGroup(ctx context.Context, og *desiredOpGroup, sub *desiredSub) (bool, error) {
	if og == nil || og.namespace == "" {
		e.set(invalidCausingUnknownCond(kindOpGroup))
		return false, nil
	}
	found, err := e.read.list(operatorGroupGVK, og.namespace, labels.Everything())
	if err != nil {
		return false, err
	}
	if e.musthave() {
		return e.musthaveOpGroup(ctx, og, found)
	}
	return false, e.mustnothaveOpGroup(ctx, og, found, sub.name)
}

// nameMatches reports whether found is the OperatorGroup og describes (for
// the default one, one with its generateName).
func (og *desiredOpGroup) nameMatches(found *unstructured.Unstructured) bool {
	return found.GetName() == og.name || (og.name == "" && found.GetGenerateName() == og.generateName)
}

func (e *evaluation) musthaveOpGroup(ctx context.Context, og *desiredOpGroup, found []unstructured.Unstructured) (bool, error) {
	switch len(found) {
	case 0:
		e.set(missingWantedCond(kindOpGroup), missingWantedObj(og.ref()))
		if !e.enforce() {
			return false, nil
		}
		return e.createOpGroup(ctx, og)
	case 1:
		return e.musthaveOneOpGroup(ctx, og, &found[0])
	default:
		e.set(opGroupTooManyCond, tooManyObjs(found)...)
		return false, nil
	}
}

// createOpGroup creates the OperatorGroup og describes, unless the API
// server has one in its namespace already, which is then evaluated as
// found: the watcher's cache lags the API server (it may not have seen the
// OperatorGroup the last evaluation created), and OLM refuses to install
// anything in a namespace of two OperatorGroups (TooManyOperatorGroups)
// until one is deleted by hand. The namespace is locked from the read to
// the creation, so that two evaluations (of two policies of one namespace)
// do not both create.
func (e *evaluation) createOpGroup(ctx context.Context, og *desiredOpGroup) (bool, error) {
	unlock, err := e.opGroupLocks.lock(ctx, og.namespace)
	if err != nil {
		return false, err
	}
	defer unlock()
	live, err := e.dynamic.Resource(resources[operatorGroupGVK]).Namespace(og.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, fmt.Errorf("listing the OperatorGroups of namespace %s: %w", og.namespace, err)
	}
	if len(live.Items) != 0 {
		return e.musthaveOpGroup(ctx, og, live.Items)
	}
	obj := og.object()
	if err := e.create(ctx, obj); err != nil {
		return false, err
	}
	e.set(createdCond(kindOpGroup), createdObj(refOf(obj)))
	return true, nil
}

// namespaceLocks are locks by namespace name.
type namespaceLocks struct {
	mu sync.Mutex
	// held has a channel for each locked namespace, closed when it is
	// unlocked.
	held map[string]chan struct{}
}

// lock waits until namespace ns is unlocked (or ctx ends), and locks it.
func (l *namespaceLocks) lock(ctx context.Context, ns string) (unlock func(), err error) {
	for {
		l.mu.Lock()
		unlocked, busy := l.held[ns]
		if !busy {
			if l.held == nil {
				l.held = map[string]chan struct{}{}
			}
			done := make(chan struct{})
			l.held[ns] = done
			l.mu.Unlock()
			return func() {
				l.mu.Lock()
				delete(l.held, ns)
				l.mu.Unlock()
				close(done)
			}, nil
		}
		l.mu.Unlock()
		select {
		case <-unlocked:
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting to create an OperatorGroup in namespace %s: %w", ns, ctx.Err())
		}
	}
}

func (e *evaluation) musthaveOneOpGroup(ctx context.Context, og *desiredOpGroup, found *unstructured.Unstructured) (bool, error) {
	if !og.nameMatches(found) {
		if !og.specified {
			// Note: as in OCM, an OperatorGroup already there is assumed to
			// suit a policy that describes none.
			e.set(opGroupPreexistingCond, matchedObj(refOf(found)))
			return true, nil
		}
		e.set(mismatchCond(kindOpGroup), missingWantedObj(og.ref()), mismatchedObj(refOf(found)))
		return false, nil
	}
	if !mergeSpec(og.object(), found, "targetNamespaces", "selector") {
		e.set(matchesCond(kindOpGroup), matchedObj(refOf(found)))
		return true, nil
	}
	if !og.specified {
		e.set(opGroupPreexistingCond, matchedObj(refOf(found)))
		return true, nil
	}
	e.set(mismatchCond(kindOpGroup), mismatchedObj(refOf(found)))
	if !e.enforce() {
		return false, nil
	}
	if err := e.update(ctx, found); err != nil {
		return false, err
	}
	e.set(updatedCond(kindOpGroup), updatedObj(refOf(found)))
	return true, nil
}

func (e *evaluation) mustnothaveOpGroup(ctx context.Context, og *desiredOpGroup, found []unstructured.Unstructured, subName string) error {
	switch {
	case len(found) == 0:
		e.set(missingNotWantedCond(kindOpGroup), missingNotWantedObj(og.ref()))
		return nil
	case len(found) > 1:
		e.set(opGroupTooManyCond, tooManyObjs(found)...)
		return nil
	}
	obj := &found[0]
	keep, err := e.keepOpGroup(og, subName)
	if err != nil {
		return err
	}
	switch {
	case keep:
		e.set(keptCond(kindOpGroup), leftoverObj(refOf(obj)))
		return nil
	case !og.nameMatches(obj):
		e.set(missingNotWantedCond(kindOpGroup), missingNotWantedObj(og.ref()))
		return nil
	case len(obj.GetOwnerReferences()) != 0: // something else may manage it
		e.set(keptCond(kindOpGroup), leftoverObj(refOf(obj)))
		return nil
	}
	e.set(foundNotWantedCond(kindOpGroup), foundNotWantedObj(refOf(obj)))
	if !e.enforce() {
		return nil
	}
	if obj.GetDeletionTimestamp() != nil {
		e.set(deletingCond(kindOpGroup), deletingObj(refOf(obj)))
		return nil
	}
	if err := e.remove(ctx, obj); err != nil {
		return err
	}
	e.set(deletedCond(kindOpGroup), deletedObj(refOf(obj)))
	return nil
}

// keepOpGroup applies removalBehavior.operatorGroups: DeleteIfUnused keeps
// the OperatorGroup while another Subscription is in its namespace.
func (e *evaluation) keepOpGroup(og *desiredOpGroup, subName string) (bool, error) {
	rb := e.policy.Spec.RemovalBehavior.ApplyDefaults()
	if rb.OperatorGroups.IsKeep() {
		return true, nil
	}
	if !rb.OperatorGroups.IsDeleteIfUnused() {
		return false, nil
	}
	subs, err := e.read.list(subscriptionGVK, og.namespace, labels.Everything())
	if err != nil {
		return false, err
	}
	for _, s := range subs {
		if s.GetName() != subName {
			return true, nil
		}
	}
	return false, nil
}

func tooManyObjs(found []unstructured.Unstructured) []policyv1.RelatedObject {
	objs := make([]policyv1.RelatedObject, 0, len(found))
	for i := range found {
		objs = append(objs, nonCompObj(refOf(&found[i]), "There is more than one OperatorGroup in this namespace"))
	}
	return objs
}

// mergeSpec merges the spec of desired into existing's (a subset match,
// except for the fields exact, which must equal the desired ones when the
// policy sets them) and reports whether existing changed.
func mergeSpec(desired, existing *unstructured.Unstructured, exact ...string) bool {
	want, _, _ := unstructured.NestedMap(desired.Object, "spec")
	have, _, _ := unstructured.NestedMap(existing.Object, "spec")
	if have == nil {
		have = map[string]any{}
	}
	changed := false
	for _, field := range exact {
		w, set := want[field]
		if !set || isEmpty(w) {
			continue
		}
		delete(want, field)
		if !compare.Matches(w, have[field], compare.Exact) {
			have[field], changed = compare.DeepCopy(w), true
		}
	}
	if !compare.Matches(want, have, compare.Subset) {
		have, changed = compare.Merge(want, have, compare.Subset).(map[string]any), true
	}
	if changed {
		existing.Object["spec"] = have
	}
	return changed
}

func isEmpty(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(t) == 0
	case []any:
		return len(t) == 0
	}
	return false
}
