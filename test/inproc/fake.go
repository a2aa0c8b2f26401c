package inproc

import (
	"context"
	"slices"
	"sync"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/compliance"
)

// ComplianceAnnotation tells FakeEvaluator what to report for a
// ConfigurationPolicy; absent means Compliant.
const ComplianceAnnotation = "test.canopy.io/compliance"

// FakeEvaluator stands in for configpolicy in tests: it reports each
// ConfigurationPolicy as its ComplianceAnnotation says, through the agent's
// Recorder, and remembers the order of first Compliant verdicts.
type FakeEvaluator struct {
	client   client.Client
	recorder *compliance.Recorder
	mu       sync.Mutex
	order    []string
}

// Setup registers the evaluator with mgr; it is an agent.Options.Evaluators.
func (f *FakeEvaluator) Setup(mgr ctrl.Manager, rec *compliance.Recorder) error {
	f.client, f.recorder = mgr.GetClient(), rec
	return ctrl.NewControllerManagedBy(mgr).Named("fake-evaluator").For(&policyv1.ConfigurationPolicy{}).Complete(f)
}

// Reconcile reports one ConfigurationPolicy.
func (f *FakeEvaluator) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cp := &policyv1.ConfigurationPolicy{}
	if err := f.client.Get(ctx, req.NamespacedName, cp); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	state := policyv1.ComplianceState(cp.Annotations[ComplianceAnnotation])
	if state == "" {
		state = policyv1.Compliant
	}
	parent, err := compliance.ParentOf(ctx, f.client, cp)
	if err != nil || parent == nil {
		return ctrl.Result{}, err
	}
	c := compliance.Compliance{Template: req.NamespacedName, State: state, Message: "fake evaluation"}
	if _, err := f.recorder.Record(ctx, *parent, c, compliance.RecordOptions{}); err != nil {
		return ctrl.Result{}, err
	}
	if cp.Status.ComplianceState == state {
		return ctrl.Result{}, nil
	}
	orig := cp.DeepCopy()
	cp.Status.ComplianceState = state
	if err := f.client.Status().Patch(ctx, cp, client.MergeFrom(orig)); err != nil {
		return ctrl.Result{}, err
	}
	if state == policyv1.Compliant {
		f.mu.Lock()
		if !slices.Contains(f.order, req.Name) {
			f.order = append(f.order, req.Name)
		}
		f.mu.Unlock()
	}
	return ctrl.Result{}, nil
}

// CompliantOrder returns the templates in the order they first turned
// Compliant.
func (f *FakeEvaluator) CompliantOrder() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.order)
}
