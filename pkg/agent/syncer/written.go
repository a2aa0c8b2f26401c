package syncer

import (
	"bytes"
	"encoding/json"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
)

// writtenStatuses remembers the status the syncer last wrote on each
// HierarchyPolicy, as stored and without lastEvaluated. The cache may not
// hold that write yet when the next reconcile of the policy reads it:
// compared with the older status the cache still shows, an evaluation
// that finds everything as it was would write again, changing nothing but
// lastEvaluated (make bench: syncer restart at 3,000 namespaces).
//
// Note: the syncer is the only writer of this status; were another to
// change it, the syncer's next evaluation that differs writes it again.
type writtenStatuses struct {
	m sync.Map // types.NamespacedName → written
}

// written is a status as written, and the UID of the policy it was
// written on (a policy recreated under the same name is another).
type written struct {
	uid    types.UID
	status []byte
}

// record remembers p's status, just written.
func (w *writtenStatuses) record(p *hierarchyv1alpha1.HierarchyPolicy) {
	if b, err := storedStatus(p.Status); err == nil {
		w.m.Store(types.NamespacedName{Namespace: p.Namespace, Name: p.Name}, written{uid: p.UID, status: b})
	}
}

// same reports whether p's status is, but for lastEvaluated, the one last
// written on p.
func (w *writtenStatuses) same(p *hierarchyv1alpha1.HierarchyPolicy) bool {
	v, ok := w.m.Load(types.NamespacedName{Namespace: p.Namespace, Name: p.Name})
	if !ok {
		return false
	}
	last := v.(written)
	b, err := storedStatus(p.Status)
	return err == nil && last.uid == p.UID && bytes.Equal(last.status, b)
}

// forget drops what was written on the policy key names.
func (w *writtenStatuses) forget(key types.NamespacedName) {
	w.m.Delete(key)
}

// storedStatus is st as the API server stores it, without lastEvaluated.
func storedStatus(st hierarchyv1alpha1.HierarchyPolicyStatus) ([]byte, error) {
	st.LastEvaluated = nil
	return json.Marshal(st)
}
