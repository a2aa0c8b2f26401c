package statuspatch_test

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/statuspatch"
)

func policyStatus(p *policyv1.Policy) any { return p.Status }

func TestApply(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name       string
		change     bool                                   // the reconcile changes the status
		reconcile  error                                  // the reconcile's own error
		patchErr   error                                  // what the API server answers
		opts       []statuspatch.Option[*policyv1.Policy] // the options of the Patch
		wantPatch  bool
		wantStatus policyv1.ComplianceState // on the server afterwards
		wantErr    []error                  // errors.Is the result
	}{
		{name: "unchanged status is not written", wantStatus: ""},
		{name: "changed status is written", change: true, wantPatch: true, wantStatus: policyv1.Compliant},
		{name: "written also when the reconcile failed", change: true, reconcile: boom, wantPatch: true,
			wantStatus: policyv1.Compliant, wantErr: []error{boom}},
		{name: "a failed patch joins the reconcile's error", change: true, reconcile: boom, patchErr: errConflict,
			wantPatch: true, wantErr: []error{boom, errConflict}},
		{name: "an object deleted meanwhile is no failure", change: true, patchErr: errGone, wantPatch: true},
		{name: "skipped by the predicate", change: true, reconcile: boom, wantErr: []error{boom},
			opts: []statuspatch.Option[*policyv1.Policy]{statuspatch.SkipWhen(func(_, _ *policyv1.Policy, err error) bool { return err != nil })}},
		{name: "not skipped when the predicate says no", change: true, wantPatch: true, wantStatus: policyv1.Compliant,
			opts: []statuspatch.Option[*policyv1.Policy]{statuspatch.SkipWhen(func(_, _ *policyv1.Policy, err error) bool { return err != nil })}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c, patches := newClient(t, tt.patchErr)
			policy := &policyv1.Policy{}
			g.Expect(c.Get(t.Context(), client.ObjectKey{Namespace: "ns", Name: "p"}, policy)).To(Succeed())
			retErr := reconcile(t.Context(), c, policy, tt.change, tt.reconcile, tt.opts...)
			patched := *patches > 0
			g.Expect(patched).To(Equal(tt.wantPatch), "patched")
			for _, want := range tt.wantErr {
				g.Expect(retErr).To(MatchError(want))
			}
			if len(tt.wantErr) == 0 {
				g.Expect(retErr).NotTo(HaveOccurred())
			}
			onServer := &policyv1.Policy{}
			g.Expect(c.Get(t.Context(), client.ObjectKey{Namespace: "ns", Name: "p"}, onServer)).To(Succeed())
			g.Expect(onServer.Status.ComplianceState).To(Equal(tt.wantStatus))
		})
	}
}

// TestOnPatched: the callback sees the written object, and only then.
func TestOnPatched(t *testing.T) {
	g := NewWithT(t)
	c, _ := newClient(t, nil)
	var seen []policyv1.ComplianceState
	onPatched := statuspatch.OnPatched(func(_ context.Context, p *policyv1.Policy) { seen = append(seen, p.Status.ComplianceState) })
	for _, change := range []bool{true, false} {
		policy := &policyv1.Policy{}
		g.Expect(c.Get(t.Context(), client.ObjectKey{Namespace: "ns", Name: "p"}, policy)).To(Succeed())
		g.Expect(reconcile(t.Context(), c, policy, change, nil, onPatched)).To(Succeed())
	}
	g.Expect(seen).To(Equal([]policyv1.ComplianceState{policyv1.Compliant}))
}

// reconcile is a Reconcile in the shape the package serves.
func reconcile(ctx context.Context, c client.Client, policy *policyv1.Policy, change bool, err error,
	opts ...statuspatch.Option[*policyv1.Policy]) (retErr error) {
	status := statuspatch.Snapshot(c, policy, policyStatus, opts...)
	defer status.Apply(ctx, &retErr)
	if change {
		policy.Status.ComplianceState = policyv1.Compliant
	}
	return err
}

var (
	errConflict = apierrors.NewConflict(schema.GroupResource{Resource: "policies"}, "p", errors.New("changed"))
	errGone     = apierrors.NewNotFound(schema.GroupResource{Resource: "policies"}, "p")
)

// newClient returns a fake client holding Policy ns/p whose status patches
// fail with patchErr (when not nil), and the count of status patches.
func newClient(t *testing.T, patchErr error) (client.Client, *int) {
	t.Helper()
	s := runtime.NewScheme()
	if err := policyv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	patches := new(int)
	p := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(p).WithStatusSubresource(p).
		WithInterceptorFuncs(interceptor.Funcs{
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
				*patches++
				if patchErr != nil {
					return patchErr
				}
				return c.Status().Patch(ctx, obj, patch, opts...)
			},
		}).Build()
	return c, patches
}
