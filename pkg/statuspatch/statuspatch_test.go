package statuspatch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/statuspatch"
)

func policyStatus(p *policyv1.Policy) any { return p.Status }

// key is the test's Policy.
var key = client.ObjectKey{Namespace: "ns", Name: "p"}

// Between the snapshot and the write, what happens on the API server.
type meanwhile int

const (
	nothing     meanwhile = iota
	statusMoved           // another status write (same spec)
	specMoved             // a spec change (a new generation)
	recreated             // deleted and created again under the same name
	deleted               // deleted
)

func TestApply(t *testing.T) {
	boom := errors.New("boom")
	owner := func(c client.Client) []statuspatch.Option[*policyv1.Policy] {
		return []statuspatch.Option[*policyv1.Policy]{statuspatch.Owner[*policyv1.Policy](c)}
	}
	ownerRecomputing := func(c client.Client) []statuspatch.Option[*policyv1.Policy] {
		return []statuspatch.Option[*policyv1.Policy]{statuspatch.Owner[*policyv1.Policy](c),
			statuspatch.Recompute(func(_ context.Context, p *policyv1.Policy) error {
				p.Status.ComplianceState = policyv1.NonCompliant // say, from what fresh shows
				return nil
			})}
	}
	skipFailed := func(client.Client) []statuspatch.Option[*policyv1.Policy] {
		return []statuspatch.Option[*policyv1.Policy]{statuspatch.SkipWhen(func(_, _ *policyv1.Policy, err error) bool { return err != nil })}
	}
	tests := []struct {
		name       string
		change     bool                                                       // the reconcile changes the status
		reconcile  error                                                      // the reconcile's own error
		meanwhile  meanwhile                                                  // between snapshot and write
		failWith   error                                                      // what the API server answers every patch, when set
		opts       func(client.Client) []statuspatch.Option[*policyv1.Policy] // the options of the Patch
		wantPatch  int                                                        // patches sent
		wantStatus policyv1.ComplianceState                                   // on the server afterwards
		wantUID    bool                                                       // the patches carried the UID
		wantRV     bool                                                       // the patches carried a resourceVersion
		wantErr    []error                                                    // errors.Is the result
		wantConfl  bool                                                       // the result is a Conflict
	}{
		{name: "unchanged status is not written"},
		{name: "changed status is written, on the version read", change: true, wantPatch: 1, wantStatus: policyv1.Compliant},
		{name: "an owner's too", change: true, opts: owner, wantPatch: 1, wantStatus: policyv1.Compliant},
		{name: "written also when the reconcile failed", change: true, reconcile: boom, wantPatch: 1,
			wantStatus: policyv1.Compliant, wantErr: []error{boom}},
		{name: "a failed patch joins the reconcile's error", change: true, reconcile: boom, failWith: errUnavailable,
			wantPatch: 1, wantErr: []error{boom, errUnavailable}},
		{name: "an object deleted meanwhile is no failure", change: true, meanwhile: deleted, wantPatch: 1},
		{name: "a successor of the same name gets nothing", change: true, meanwhile: recreated, wantPatch: 1,
			wantStatus: ""},
		{name: "a successor of the same name gets nothing from an owner either", change: true, meanwhile: recreated, opts: owner,
			wantPatch: 1, wantStatus: ""},
		{name: "a shared status moved meanwhile: refused, then the same changes on the API server's copy", change: true,
			meanwhile: statusMoved, wantPatch: 2, wantStatus: policyv1.Compliant},
		{name: "an owner's stale write is refused, then written over the API server's copy", change: true, meanwhile: statusMoved,
			opts: owner, wantPatch: 2, wantStatus: policyv1.Compliant},
		{name: "an owner recomputes the status of the API server's copy", change: true, meanwhile: statusMoved,
			opts: ownerRecomputing, wantPatch: 2, wantStatus: policyv1.NonCompliant},
		{name: "a status computed for an older spec is not written: a conflict, to evaluate again", change: true,
			meanwhile: specMoved, opts: owner, wantPatch: 1, wantStatus: policyv1.Pending, wantConfl: true},
		{name: "a status recomputed for the newer spec is written", change: true, meanwhile: specMoved,
			opts: ownerRecomputing, wantPatch: 2, wantStatus: policyv1.NonCompliant},
		{name: "conflicts without end give up, with the conflict", change: true, failWith: errConflict, opts: owner,
			wantPatch: 5, wantConfl: true},
		{name: "skipped by the predicate", change: true, reconcile: boom, wantErr: []error{boom}, opts: skipFailed},
		{name: "not skipped when the predicate says no", change: true, wantPatch: 1, wantStatus: policyv1.Compliant,
			opts: skipFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			srv := newServer(t, tt.failWith)
			policy := &policyv1.Policy{}
			g.Expect(srv.Get(t.Context(), key, policy)).To(Succeed())
			var opts []statuspatch.Option[*policyv1.Policy]
			if tt.opts != nil {
				opts = tt.opts(srv)
			}
			retErr := reconcile(t.Context(), srv, policy, tt.change, tt.reconcile, func() { srv.meanwhile(t, tt.meanwhile) }, opts...)
			g.Expect(srv.patches).To(HaveLen(tt.wantPatch), "patches")
			for _, p := range srv.patches {
				g.Expect(p).To(HaveKeyWithValue("metadata", HaveKey("resourceVersion")), "every patch carries its precondition")
			}
			for _, want := range tt.wantErr {
				g.Expect(retErr).To(MatchError(want))
			}
			if tt.wantConfl {
				g.Expect(apierrors.IsConflict(retErr)).To(BeTrue(), "%v", retErr)
			}
			if len(tt.wantErr) == 0 && !tt.wantConfl {
				g.Expect(retErr).NotTo(HaveOccurred())
			}
			onServer := &policyv1.Policy{}
			if err := srv.Get(t.Context(), key, onServer); !apierrors.IsNotFound(err) {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(onServer.Status.ComplianceState).To(Equal(tt.wantStatus))
			}
		})
	}
}

// TestOnPatched: the callback sees the written object, and only then.
func TestOnPatched(t *testing.T) {
	g := NewWithT(t)
	srv := newServer(t, nil)
	var seen []policyv1.ComplianceState
	onPatched := statuspatch.OnPatched(func(_ context.Context, p *policyv1.Policy) { seen = append(seen, p.Status.ComplianceState) })
	for _, change := range []bool{true, false} {
		policy := &policyv1.Policy{}
		g.Expect(srv.Get(t.Context(), key, policy)).To(Succeed())
		g.Expect(reconcile(t.Context(), srv, policy, change, nil, nil, onPatched)).To(Succeed())
	}
	policy := &policyv1.Policy{}
	g.Expect(srv.Get(t.Context(), key, policy)).To(Succeed())
	g.Expect(reconcile(t.Context(), srv, policy, true, nil, func() { srv.meanwhile(t, recreated) }, onPatched)).To(Succeed())
	g.Expect(seen).To(Equal([]policyv1.ComplianceState{policyv1.Compliant}), "not for a successor")
}

// TestConflictWithoutReader: a writer that cannot read the object again
// returns the conflict, for its reconcile to be retried, and writes
// nothing; ReadFrom gives it a reader.
func TestConflictWithoutReader(t *testing.T) {
	g := NewWithT(t)
	srv := newServer(t, nil)
	writeOnly := struct{ client.StatusClient }{srv}
	policy := &policyv1.Policy{}
	g.Expect(srv.Get(t.Context(), key, policy)).To(Succeed())
	status := statuspatch.Snapshot(writeOnly, policy, policyStatus)
	policy.Status.ComplianceState = policyv1.Compliant
	srv.meanwhile(t, statusMoved)
	var err error
	status.Apply(t.Context(), &err)
	g.Expect(apierrors.IsConflict(err)).To(BeTrue(), "%v", err)
	g.Expect(srv.status(t)).To(Equal(policyv1.Pending))

	g.Expect(srv.Get(t.Context(), key, policy)).To(Succeed())
	status = statuspatch.Snapshot(writeOnly, policy, policyStatus, statuspatch.ReadFrom[*policyv1.Policy](srv))
	policy.Status.ComplianceState = policyv1.Compliant
	srv.meanwhile(t, statusMoved)
	err = nil
	status.Apply(t.Context(), &err)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(srv.status(t)).To(Equal(policyv1.Compliant))
	g.Expect(srv.patches).To(HaveLen(3), "one refused, one refused then redone")
}

// TestRemember: a reconcile that reads the object from a cache that has
// not seen the last status write starts from the object as written; a
// cache that caught up, or holds another object of the name, is read as
// it is.
func TestRemember(t *testing.T) {
	g := NewWithT(t)
	srv := newServer(t, nil)
	var w statuspatch.Written[*policyv1.Policy]
	opts := []statuspatch.Option[*policyv1.Policy]{statuspatch.Owner[*policyv1.Policy](srv), statuspatch.Remember(&w)}

	cached := &policyv1.Policy{}
	g.Expect(srv.Get(t.Context(), key, cached)).To(Succeed())
	g.Expect(reconcile(t.Context(), srv, cached.DeepCopy(), true, nil, nil, opts...)).To(Succeed())
	g.Expect(srv.patches).To(HaveLen(1))

	stale := cached.DeepCopy() // the cache has not seen the write
	status := statuspatch.Snapshot(srv, stale, policyStatus, opts...)
	g.Expect(stale.Status.ComplianceState).To(Equal(policyv1.Compliant), "the status as written")
	var err error
	status.Apply(t.Context(), &err)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(srv.patches).To(HaveLen(1), "an evaluation that finds everything as written writes nothing")

	stale = cached.DeepCopy()
	g.Expect(reconcile(t.Context(), srv, stale, false, nil, func() {}, append(opts,
		statuspatch.Recompute(func(context.Context, *policyv1.Policy) error { return nil }))...)).To(Succeed())
	g.Expect(srv.patches).To(HaveLen(1))

	// The reconcile changes the status back to the cache's: written, not
	// skipped as "no change" against the stale cache.
	stale = cached.DeepCopy()
	status = statuspatch.Snapshot(srv, stale, policyStatus, opts...)
	stale.Status.ComplianceState = ""
	status.Apply(t.Context(), &err)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(srv.patches).To(HaveLen(2))
	g.Expect(srv.status(t)).To(BeEmpty())

	srv.meanwhile(t, recreated)
	successor := &policyv1.Policy{}
	g.Expect(srv.Get(t.Context(), key, successor)).To(Succeed())
	read := successor.DeepCopy()
	statuspatch.Snapshot(srv, read, policyStatus, opts...)
	g.Expect(read).To(Equal(successor), "another object of the name: as read")

	w.Forget(key)
}

// TestAdvance: a reconcile that writes part of the status early (the
// rollout before the replicas) and advances its deferred patch sends, at
// the end, only what it changed besides, on the version the early write
// made: nothing when nothing else changed, never a refused write.
func TestAdvance(t *testing.T) {
	rollout := func(from, to *policyv1.Policy) { to.Status.Rollout = from.Status.Rollout }
	for _, advance := range []bool{false, true} {
		for _, changeMore := range []bool{false, true} {
			t.Run(fmt.Sprintf("advance=%v/more=%v", advance, changeMore), func(t *testing.T) {
				g := NewWithT(t)
				srv := newServer(t, nil)
				policy := &policyv1.Policy{}
				g.Expect(srv.Get(t.Context(), key, policy)).To(Succeed())
				status := statuspatch.Snapshot(srv, policy, policyStatus, statuspatch.ReadFrom[*policyv1.Policy](srv))

				policy.Status.Rollout = &policyv1.RolloutStatus{Phase: "Progressing"}
				early := &policyv1.Policy{}
				g.Expect(srv.Get(t.Context(), key, early)).To(Succeed())
				var err error
				first := statuspatch.Snapshot(srv, early, policyStatus)
				early.Status.Rollout = policy.Status.Rollout.DeepCopy()
				first.Apply(t.Context(), &err)
				g.Expect(err).NotTo(HaveOccurred())
				if advance {
					status.Advance(early, rollout)
				}
				if changeMore {
					policy.Status.ComplianceState = policyv1.Compliant
				}
				status.Apply(t.Context(), &err)
				g.Expect(err).NotTo(HaveOccurred())

				want := 1 // the early write
				switch {
				case advance && changeMore:
					want++ // the rest, accepted at once
				case !advance:
					want += 2 // refused on the snapshot's version, sent again
				}
				g.Expect(srv.patches).To(HaveLen(want))
				if advance && changeMore {
					g.Expect(srv.patches[1]).NotTo(HaveKeyWithValue("status", HaveKey("rollout")), "only what changed besides")
				}
				final := &policyv1.Policy{}
				g.Expect(srv.Get(t.Context(), key, final)).To(Succeed())
				g.Expect(final.Status.Rollout).To(Equal(policy.Status.Rollout))
				if changeMore {
					g.Expect(final.Status.ComplianceState).To(Equal(policyv1.Compliant))
				}
			})
		}
	}

	g := NewWithT(t)
	srv := newServer(t, nil)
	policy := &policyv1.Policy{}
	g.Expect(srv.Get(t.Context(), key, policy)).To(Succeed())
	status := statuspatch.Snapshot(srv, policy, policyStatus)
	srv.meanwhile(t, recreated)
	successor := &policyv1.Policy{}
	g.Expect(srv.Get(t.Context(), key, successor)).To(Succeed())
	successor.Status.Rollout = &policyv1.RolloutStatus{Phase: "Progressing"}
	status.Advance(successor, rollout)
	policy.Status.ComplianceState = policyv1.Compliant
	var err error
	status.Apply(t.Context(), &err)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(srv.status(t)).To(BeEmpty(), "another object's write does not advance the patch: refused, and not redone on the successor")
}

// reconcile is a Reconcile in the shape the package serves; meanwhile,
// when not nil, runs between the snapshot and the write.
func reconcile(ctx context.Context, c client.Client, policy *policyv1.Policy, change bool, err error, meanwhile func(),
	opts ...statuspatch.Option[*policyv1.Policy]) (retErr error) {
	status := statuspatch.Snapshot(c, policy, policyStatus, opts...)
	defer status.Apply(ctx, &retErr)
	if change {
		policy.Status.ComplianceState = policyv1.Compliant
	}
	if meanwhile != nil {
		meanwhile()
	}
	return err
}

var (
	errConflict    = apierrors.NewConflict(schema.GroupResource{Resource: "policies"}, "p", errors.New("changed"))
	errUnavailable = apierrors.NewServiceUnavailable("away")
)

// server is a fake API server holding Policy ns/p, that checks the
// resourceVersion a status patch carries as the API server does
// (Conflict), and keeps the patches it was sent.
type server struct {
	client.Client
	patches []map[string]any
	uids    int
}

// newServer returns a server whose status patches fail with failWith
// (when not nil).
func newServer(t *testing.T, failWith error) *server {
	t.Helper()
	s := runtime.NewScheme()
	if err := policyv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	srv := &server{}
	p := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "uid-0", Generation: 1}}
	srv.Client = fake.NewClientBuilder().WithScheme(s).WithObjects(p).WithStatusSubresource(p).
		WithInterceptorFuncs(interceptor.Funcs{
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
				data, err := patch.Data(obj)
				if err != nil {
					return err
				}
				body := map[string]any{}
				if err := json.Unmarshal(data, &body); err != nil {
					return err
				}
				srv.patches = append(srv.patches, body)
				if failWith != nil {
					return failWith
				}
				return srv.patch(ctx, c, sub, obj, body, opts...)
			},
		}).Build()
	return srv
}

// patch checks the preconditions of body and applies the rest of it.
func (s *server) patch(ctx context.Context, c client.Client, sub string, obj client.Object, body map[string]any, opts ...client.SubResourcePatchOption) error {
	current := &policyv1.Policy{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), current); err != nil {
		return err
	}
	meta, _ := body["metadata"].(map[string]any)
	if rv, ok := meta["resourceVersion"]; ok && rv != current.ResourceVersion {
		return errConflict
	}
	rest := maps.Clone(body)
	delete(rest, "metadata")
	data, err := json.Marshal(rest)
	if err != nil {
		return err
	}
	return c.SubResource(sub).Patch(ctx, obj, client.RawPatch(types.MergePatchType, data), opts...)
}

// meanwhile makes what happens on the server between a snapshot and its
// write.
func (s *server) meanwhile(t *testing.T, what meanwhile) {
	t.Helper()
	ctx := context.Background()
	p := &policyv1.Policy{}
	if err := s.Get(ctx, key, p); err != nil {
		t.Fatal(err)
	}
	var err error
	switch what {
	case statusMoved:
		p.Status.ComplianceState = policyv1.Pending
		err = s.Status().Update(ctx, p)
	case specMoved:
		p.Status.ComplianceState = policyv1.Pending
		if err = s.Status().Update(ctx, p); err == nil {
			p.Spec.Disabled, p.Generation = true, 2
			err = s.Update(ctx, p)
		}
	case recreated:
		if err = s.Delete(ctx, p); err == nil {
			s.uids++
			err = s.Create(ctx, &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p",
				UID: types.UID(fmt.Sprintf("uid-%d", s.uids)), Generation: 1}})
		}
	case deleted:
		err = s.Delete(ctx, p)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// status is the compliance of the server's Policy.
func (s *server) status(t *testing.T) policyv1.ComplianceState {
	t.Helper()
	p := &policyv1.Policy{}
	if err := s.Get(context.Background(), key, p); err != nil {
		t.Fatal(err)
	}
	return p.Status.ComplianceState
}
