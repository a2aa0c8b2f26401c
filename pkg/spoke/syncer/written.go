package syncer

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
)

// writtenStatuses remembers the status the syncer last wrote on each
// HierarchyPolicy. The cache may not hold that write yet when the next
// reconcile of the policy reads it, and a status compared with, and patched
// from, the older one the cache still shows goes wrong both ways: an
// evaluation that finds everything as it was writes again (make bench:
// syncer restart at 3,000 namespaces), and one that finds everything as
// the older status said writes nothing, leaving the newer status (say,
// objects listed as just created) on the API server.
//
// Note: the syncer is the only writer of this status, so what it last
// wrote is what the API server holds.
type writtenStatuses struct {
	m sync.Map // types.NamespacedName → written
}

// written is a status as written, and the UID of the policy it was
// written on (a policy recreated under the same name is another).
type written struct {
	uid    types.UID
	status *hierarchyv1alpha1.HierarchyPolicyStatus
}

// record remembers p's status, just written.
func (w *writtenStatuses) record(p *hierarchyv1alpha1.HierarchyPolicy) {
	w.m.Store(types.NamespacedName{Namespace: p.Namespace, Name: p.Name}, written{uid: p.UID, status: p.Status.DeepCopy()})
}

// restore sets p's status, read from the cache, to the one last written on
// p, if any.
func (w *writtenStatuses) restore(p *hierarchyv1alpha1.HierarchyPolicy) {
	v, _ := w.m.Load(types.NamespacedName{Namespace: p.Namespace, Name: p.Name})
	if last, ok := v.(written); ok && last.uid == p.UID {
		p.Status = *last.status.DeepCopy()
	}
}

// forget drops what was written on the policy key names.
func (w *writtenStatuses) forget(key types.NamespacedName) {
	w.m.Delete(key)
}
