package configpolicy

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// updateDiffs remembers, per policy and object, the diff of the update the
// policy last made in place (not a recreate: the new object is evaluated
// afresh, with no diff) and the object's resourceVersion after it. The
// evaluation that follows the update finds the object as specified, and
// the related object keeps the diff of what was changed while the object
// stays as the update left it, as in OCM (whose controller skips an object
// it evaluated at the same resourceVersion). It is memory only: after a
// restart the diff is gone; a deleted policy's are forgotten.
type updateDiffs struct {
	mu    sync.Mutex
	diffs map[updateKey]updateDiff
}

type updateKey struct {
	policy types.NamespacedName
	object policyv1.ObjectResource
}

// updateDiff is an update's diff, by the updating policy's UID (a policy
// recreated under the same name has another) and the object's
// resourceVersion after it.
type updateDiff struct {
	policy                types.UID
	resourceVersion, diff string
}

// remember notes that policy updated object to resourceVersion, with diff.
func (u *updateDiffs) remember(policy *policyv1.ConfigurationPolicy, object policyv1.ObjectResource, resourceVersion, diff string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.diffs == nil {
		u.diffs = map[updateKey]updateDiff{}
	}
	u.diffs[updateKey{client.ObjectKeyFromObject(policy), object}] = updateDiff{policy.UID, resourceVersion, diff}
}

// diff returns the diff of policy's last update of object when the object
// is still at that update's resourceVersion, else "" (and forgets it).
func (u *updateDiffs) diff(policy *policyv1.ConfigurationPolicy, object policyv1.ObjectResource, resourceVersion string) string {
	u.mu.Lock()
	defer u.mu.Unlock()
	key := updateKey{client.ObjectKeyFromObject(policy), object}
	d, ok := u.diffs[key]
	if !ok {
		return ""
	}
	if d.policy != policy.UID || d.resourceVersion != resourceVersion {
		delete(u.diffs, key)
		return ""
	}
	return d.diff
}

// forget drops what is remembered of the deleted policy named key.
func (u *updateDiffs) forget(key types.NamespacedName) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for k := range u.diffs {
		if k.policy == key {
			delete(u.diffs, k)
		}
	}
}
