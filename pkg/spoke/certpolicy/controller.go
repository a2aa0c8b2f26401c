package certpolicy

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/compliance"
	"github.com/canopy-policy/canopy/pkg/spoke/internal/enqueue"
	"github.com/canopy-policy/canopy/pkg/spoke/internal/evaluator"
)

// Name is the controller's name.
const Name = "certpolicy"

// DefaultResyncInterval is how often a CertificatePolicy is evaluated
// again when nothing it watches changes: Secrets are polled, not watched
// (see the RBAC note below). OCM's controller polls every 10s.
const DefaultResyncInterval = time.Minute

// gvk is the kind of the templates this controller evaluates.
var gvk = policyv1.GroupVersion.WithKind(policyv1.CertificatePolicyKind)

// kind is what the evaluators' shared code needs to know of
// CertificatePolicies: Secrets are polled, not watched.
var kind = evaluator.Kind[*policyv1.CertificatePolicy]{Name: Name, GVK: gvk,
	New:    func() *policyv1.CertificatePolicy { return &policyv1.CertificatePolicy{} },
	Status: func(p *policyv1.CertificatePolicy) any { return p.Status }}

// RBAC: reading Secrets is what a policy checks, not the agent's own
// machinery, so it comes from the enforcement ClusterRole
// (deploy/spoke/rbac/enforcement.go), broad by default. Narrowed without
// Secrets, a CertificatePolicy reports the API server's Forbidden message
// as NonCompliant. For the same reason Secrets are polled
// (ResyncInterval), not watched: a watch the role forbids would stop the
// agent's cache from syncing. The rules below are this controller's own.
//
// +kubebuilder:rbac:groups=policy.open-cluster-management.io,resources=certificatepolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=policy.open-cluster-management.io,resources=certificatepolicies/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=policy.open-cluster-management.io,resources=policies,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;list

// Reconciler evaluates CertificatePolicies on the managed cluster.
type Reconciler struct {
	// ManagedClient reads CertificatePolicies and Namespaces (cached) and
	// writes CertificatePolicy status.
	ManagedClient client.Client
	// ManagedReader reads Secrets from the API server: their data is never
	// cached.
	ManagedReader client.Reader
	// Recorder records compliance events on the parent Policies.
	Recorder *compliance.Recorder
	// ResyncInterval is how often a policy is evaluated again, to see
	// changed Secrets; zero means DefaultResyncInterval. A policy is also
	// evaluated when it, or a Namespace, changes, and when a certificate
	// crosses its minimum duration.
	ResyncInterval time.Duration

	// base is what every evaluator shares: the start and end of Reconcile.
	base *evaluator.Base[*policyv1.CertificatePolicy]
	now  func() time.Time
}

// SetupWithManager registers the controller with mgr, the managed
// cluster's manager. ManagedClient and Recorder are required;
// ManagedReader defaults to the manager's API reader.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.ResyncInterval == 0 {
		r.ResyncInterval = DefaultResyncInterval
	}
	clients := evaluator.Clients{ManagedClient: r.ManagedClient, ManagedReader: r.ManagedReader, Recorder: r.Recorder}
	base, bld, err := evaluator.Setup(mgr, kind, clients,
		predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}))
	if err != nil {
		return err
	}
	r.base, r.ManagedReader, r.now = base, base.ManagedReader, time.Now
	return bld.Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.allPolicies), builder.WithPredicates(
		predicate.Or[client.Object](predicate.LabelChangedPredicate{}, predicate.GenerationChangedPredicate{}))).
		WithOptions(evaluator.Options(1)). // one worker: controller-runtime's default, which it always had
		Complete(r)
}

// Reconcile evaluates one CertificatePolicy and records its compliance.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return r.base.Reconcile(ctx, req, func(ctx context.Context, policy *policyv1.CertificatePolicy) (ctrl.Result, error) {
		if !policy.DeletionTimestamp.IsZero() {
			return ctrl.Result{}, nil // nothing to clean up: the policy writes nothing
		}
		return r.reconcileNormal(ctx, policy)
	})
}

func (r *Reconciler) reconcileNormal(ctx context.Context, policy *policyv1.CertificatePolicy) (ctrl.Result, error) {
	now := r.now()
	e, err := r.evaluate(ctx, policy, now)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !sameFindings(policy.Status, e.status) {
		policy.Status = e.status
	}
	ctrl.LoggerFrom(ctx).V(4).Info("Evaluated", "policy", klog.KObj(policy), "compliant", e.status.ComplianceState)
	if err := r.Recorder.RecordTemplate(ctx, r.ManagedClient, policy, gvk, e.status.ComplianceState, e.message, false); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: r.requeue(e.next, now)}, nil
}

// evaluate reads the selected namespaces' TLS Secrets and checks them. An
// invalid spec, or Secrets the agent may not read, is an evaluation
// (NonCompliant, saying why), not an error: a retry cannot fix it.
func (r *Reconciler) evaluate(ctx context.Context, policy *policyv1.CertificatePolicy, now time.Time) (evaluation, error) {
	rules, err := parseRules(&policy.Spec)
	if err != nil {
		return invalid(err), nil
	}
	nsList := &corev1.NamespaceList{}
	if err := r.ManagedClient.List(ctx, nsList); err != nil {
		return evaluation{}, fmt.Errorf("listing namespaces: %w", err)
	}
	namespaces, err := selectNamespaces(policy.Spec.NamespaceSelector, nsList.Items)
	if err != nil {
		return invalid(err), nil
	}
	certs := map[string][]certificate{}
	for _, ns := range namespaces {
		if certs[ns], err = r.certificates(ctx, policy, ns); apierrors.IsForbidden(err) {
			return invalid(err), nil // the enforcement ClusterRole was narrowed: say so
		} else if err != nil {
			return evaluation{}, err
		}
	}
	return evaluate(rules, namespaces, certs, now), nil
}

// certificates reads the certificates of the TLS Secrets of namespace ns
// that policy's labelSelector selects. A Secret without a readable
// certificate is skipped, as in OCM; only its name is logged.
func (r *Reconciler) certificates(ctx context.Context, policy *policyv1.CertificatePolicy, ns string) ([]certificate, error) {
	selector := client.MatchingLabels{}
	for k, v := range policy.Spec.LabelSelector {
		selector[k] = string(v)
	}
	secrets := &corev1.SecretList{}
	err := r.ManagedReader.List(ctx, secrets, client.InNamespace(ns), selector,
		client.MatchingFields{"type": string(corev1.SecretTypeTLS)})
	if err != nil {
		return nil, fmt.Errorf("listing the TLS Secrets of namespace %s: %w", ns, err)
	}
	var out []certificate
	for i := range secrets.Items {
		c, err := parseSecret(&secrets.Items[i])
		if err != nil {
			ctrl.LoggerFrom(ctx).V(4).Info("Skipping a Secret without a readable certificate", "policy", klog.KObj(policy),
				"secret", klog.KObj(&secrets.Items[i]), "error", err.Error())
			continue
		}
		out = append(out, c)
	}
	return out, nil
}

// invalid is the evaluation of a policy whose spec cannot be evaluated.
func invalid(err error) evaluation {
	return evaluation{status: policyv1.CertificatePolicyStatus{ComplianceState: policyv1.NonCompliant}, message: err.Error()}
}

// sameFindings reports whether a and b differ only in what time alone
// changes (time left before expiry, and the messages quoting it), so that
// a steady policy writes no status.
func sameFindings(a, b policyv1.CertificatePolicyStatus) bool {
	return equality.Semantic.DeepEqual(timeless(a), timeless(b))
}

func timeless(s policyv1.CertificatePolicyStatus) policyv1.CertificatePolicyStatus {
	out := *s.DeepCopy()
	for ns, d := range out.CompliancyDetails {
		d.Message = ""
		for name, c := range d.NonCompliantCertificatesList {
			c.Expiration, c.Expiry = "", 0
			d.NonCompliantCertificatesList[name] = c
		}
		out.CompliancyDetails[ns] = d
	}
	return out
}

// requeue is the wait before the next evaluation: the resync interval
// (jittered, so that policies spread out), or less when a certificate
// compliant now crosses its minimum duration sooner (next).
func (r *Reconciler) requeue(next, now time.Time) time.Duration {
	after := wait.Jitter(r.ResyncInterval, 0.1)
	if !next.IsZero() {
		after = min(after, max(next.Sub(now), 0)+time.Second)
	}
	return after
}

// allPolicies maps any event to every CertificatePolicy.
func (r *Reconciler) allPolicies(ctx context.Context, _ client.Object) []ctrl.Request {
	list := &policyv1.CertificatePolicyList{}
	if err := r.ManagedClient.List(ctx, list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing certificate policies to re-evaluate")
		return nil
	}
	return enqueue.Each(list.Items)
}
