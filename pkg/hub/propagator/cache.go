package propagator

import (
	"k8s.io/apimachinery/pkg/api/meta"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/replica"
)

// TrimPolicy is the hub cache's transform for Policies: it drops
// managedFields from every policy and status.details (the compliance
// history) from replicas. No hub controller reads either; the history is the
// bulk of a replica. Use it as the cache.ByObject Transform of Policy.
//
// Note: a trimmed replica must never be written back whole; the propagator
// patches replicas, and status writes are the agents'.
func TrimPolicy(obj any) (any, error) {
	if p, ok := obj.(*policyv1.Policy); ok {
		p.ManagedFields = nil
		if replica.IsReplica(p) {
			p.Status.Details = nil
		}
		return p, nil
	}
	if accessor, err := meta.Accessor(obj); err == nil {
		accessor.SetManagedFields(nil)
	}
	return obj, nil
}
