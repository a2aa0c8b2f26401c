package evaluator_test

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/compliance"
	"github.com/canopy-policy/canopy/pkg/spoke/internal/evaluator"
)

var key = types.NamespacedName{Namespace: "ns", Name: "certs"}

// newBase returns a Base over a fake API server holding one
// CertificatePolicy, and counts the status patches it answers.
func newBase(t *testing.T) (*evaluator.Base[*policyv1.CertificatePolicy], *int) {
	t.Helper()
	s := runtime.NewScheme()
	if err := policyv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	patches := new(int)
	p := &policyv1.CertificatePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(p).WithStatusSubresource(p).
		WithInterceptorFuncs(interceptor.Funcs{
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
				*patches++
				return c.Status().Patch(ctx, obj, patch, opts...)
			},
		}).Build()
	return &evaluator.Base[*policyv1.CertificatePolicy]{Kind: kind, Clients: evaluator.Clients{ManagedClient: c, ManagedReader: c,
		Recorder: compliance.NewRecorder(c, c, compliance.EventSource{Component: "test"})}}, patches
}

var kind = evaluator.Kind[*policyv1.CertificatePolicy]{Name: "certpolicy",
	GVK:    policyv1.GroupVersion.WithKind(policyv1.CertificatePolicyKind),
	New:    func() *policyv1.CertificatePolicy { return &policyv1.CertificatePolicy{} },
	Status: func(p *policyv1.CertificatePolicy) any { return p.Status }}

// evaluation returns an evaluate function that sets the compliance state
// (when not empty), returns err, and counts its calls.
func evaluation(state policyv1.ComplianceState, err error) (func(context.Context, *policyv1.CertificatePolicy) (ctrl.Result, error), *int) {
	calls := new(int)
	return func(_ context.Context, p *policyv1.CertificatePolicy) (ctrl.Result, error) {
		*calls++
		if state != "" {
			p.Status.ComplianceState = state
		}
		return ctrl.Result{}, err
	}, calls
}

func TestReconcileWritesAChangedStatusOnce(t *testing.T) {
	g := NewWithT(t)
	b, patches := newBase(t)
	evaluate, calls := evaluation(policyv1.Compliant, nil)
	_, err := b.Reconcile(t.Context(), ctrl.Request{NamespacedName: key}, evaluate)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(*calls).To(Equal(1))
	g.Expect(*patches).To(Equal(1))
	onServer := &policyv1.CertificatePolicy{}
	g.Expect(b.ManagedClient.Get(t.Context(), key, onServer)).To(Succeed())
	g.Expect(onServer.Status.ComplianceState).To(Equal(policyv1.Compliant))
}

func TestReconcileWritesTheStatusAlsoWhenEvaluateFails(t *testing.T) {
	g := NewWithT(t)
	b, patches := newBase(t)
	boom := errors.New("boom")
	evaluate, _ := evaluation(policyv1.NonCompliant, boom)
	_, err := b.Reconcile(t.Context(), ctrl.Request{NamespacedName: key}, evaluate)
	g.Expect(err).To(MatchError(boom))
	g.Expect(*patches).To(Equal(1))
}

func TestReconcileWritesNoUnchangedStatus(t *testing.T) {
	g := NewWithT(t)
	b, patches := newBase(t)
	evaluate, calls := evaluation("", nil)
	_, err := b.Reconcile(t.Context(), ctrl.Request{NamespacedName: key}, evaluate)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(*calls).To(Equal(1))
	g.Expect(*patches).To(BeZero())
}

func TestReconcileOnAGonePolicy(t *testing.T) {
	g := NewWithT(t)
	b, _ := newBase(t)
	evaluate, calls := evaluation(policyv1.Compliant, nil)
	_, err := b.Reconcile(t.Context(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "gone"}}, evaluate)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(*calls).To(BeZero(), "nothing to evaluate")
}

// failingReader fails every read, to show which reader Reconcile used.
type failingReader struct{ client.Reader }

var errRead = errors.New("read failed")

func (failingReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errRead
}

func TestReconcileReadsThroughManagedReader(t *testing.T) {
	g := NewWithT(t)
	b, _ := newBase(t)
	b.ManagedReader = failingReader{}
	evaluate, calls := evaluation("", nil)
	_, err := b.Reconcile(t.Context(), ctrl.Request{NamespacedName: key}, evaluate)
	g.Expect(err).To(MatchError(errRead))
	g.Expect(*calls).To(BeZero())
}

func TestSetupNeedsTheClients(t *testing.T) {
	g := NewWithT(t)
	_, _, err := evaluator.Setup(nil, kind, evaluator.Clients{})
	g.Expect(err).To(MatchError("certpolicy.Reconciler needs a ManagedClient and a Recorder"))
}

func TestWatcherID(t *testing.T) {
	g := NewWithT(t)
	id := evaluator.WatcherID(policyv1.GroupVersion.WithKind(policyv1.ConfigurationPolicyKind), key)
	g.Expect(id.Group).To(Equal(policyv1.GroupVersion.Group))
	g.Expect(id.Version).To(Equal(policyv1.GroupVersion.Version))
	g.Expect(id.Kind).To(Equal(policyv1.ConfigurationPolicyKind))
	g.Expect(types.NamespacedName{Namespace: id.Namespace, Name: id.Name}).To(Equal(key))
}
