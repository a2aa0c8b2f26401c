package propagator

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// TestReplicaTheCacheShowsBeforeOwnPatch checks that a replica the cache
// still shows as it was before the propagator's own patch is not patched
// again with the same content, and that it is patched as usual when the
// content asked for differs or the cache shows another version of it.
func TestReplicaTheCacheShowsBeforeOwnPatch(t *testing.T) {
	g := NewWithT(t)
	ctx, c := t.Context(), clusterA(t)
	counting := &patchCounter{Client: c}
	r := &Reconciler{Client: counting, APIReader: c}
	replica := func(action policyv1.RemediationAction) *policyv1.Policy {
		return replicaOnClusterA("ns.pol", "ns.pol", action)
	}
	g.Expect(c.Create(ctx, replica(policyv1.Inform))).To(Succeed())
	stale := &policyv1.Policy{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: "cluster-a", Name: "ns.pol"}, stale)).To(Succeed())

	g.Expect(r.applyReplica(ctx, replica(policyv1.Enforce), stale)).To(Succeed())
	g.Expect(counting.patches).To(Equal(1))
	g.Expect(r.applyReplica(ctx, replica(policyv1.Enforce), stale)).To(Succeed())
	g.Expect(counting.patches).To(Equal(1), "the same patch is not sent again while the cache lags it")

	other := replica(policyv1.Enforce)
	other.Labels["team"] = "a"
	g.Expect(r.applyReplica(ctx, other, stale)).To(Succeed())
	g.Expect(counting.patches).To(Equal(2), "other content is patched")

	current := &policyv1.Policy{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: "cluster-a", Name: "ns.pol"}, current)).To(Succeed())
	edited := current.DeepCopy()
	edited.Spec.RemediationAction = policyv1.Enforce
	g.Expect(c.Update(ctx, edited)).To(Succeed(), "someone else edits the replica")
	g.Expect(r.applyReplica(ctx, replica(policyv1.Inform), edited)).To(Succeed())
	g.Expect(counting.patches).To(Equal(3), "a version of the replica the propagator did not write is compared as usual")
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: "cluster-a", Name: "ns.pol"}, current)).To(Succeed())
	g.Expect(current.Spec.RemediationAction).To(Equal(policyv1.Inform))
}

// patchCounter counts the patches sent through its client.
type patchCounter struct {
	client.Client
	patches int
}

func (p *patchCounter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	p.patches++
	return p.Client.Patch(ctx, obj, patch, opts...)
}
