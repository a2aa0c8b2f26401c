package spoke

import (
	"context"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/internal/scheme"
	"github.com/canopy-policy/canopy/pkg/compliance"
	"github.com/canopy-policy/canopy/pkg/spoke/certpolicy"
	"github.com/canopy-policy/canopy/pkg/spoke/configpolicy"
	"github.com/canopy-policy/canopy/pkg/spoke/gatekeeper"
	"github.com/canopy-policy/canopy/pkg/spoke/lease"
	"github.com/canopy-policy/canopy/pkg/spoke/operatorpolicy"
	"github.com/canopy-policy/canopy/pkg/spoke/statussync"
	"github.com/canopy-policy/canopy/pkg/spoke/syncer"
	"github.com/canopy-policy/canopy/pkg/spoke/templatesync"
)

// Component is the agent's name in the compliance events it records.
const Component = "canopy-agent"

// Options describe one agent: the cluster it serves and how it reaches the
// hub. The zero values of the optional fields are what cmd/spoke runs.
type Options struct {
	// HubConfig connects to the hub with the agent's identity, which may
	// only reach the cluster namespace.
	HubConfig *rest.Config
	// ClusterName is the managed cluster's name on the hub, which is also
	// its cluster namespace there and the namespace of its policies here.
	ClusterName string
	// InstallNamespace is where the agent runs on the managed cluster and
	// renews the addon Lease OCM reads for its health; empty means no such
	// Lease (outside OCM).
	InstallNamespace string
	// Instance names this agent in the events and Leases it writes; empty
	// means the host name (the pod's name in a cluster).
	Instance string
	// Evaluators register the policy template evaluators with the managed
	// manager, recording compliance through rec; nil means Evaluators, the
	// ones that ship, denying TemplateFuncDenylist. Tests pass a fake or
	// NoEvaluators.
	Evaluators func(mgr ctrl.Manager, rec *compliance.Recorder) error
	// ClusterNamespaceOnly restricts the managed cache and the policy
	// controllers to the cluster namespace, so that the agents of several
	// test clusters can share one managed API server. The agent that ships
	// watches the whole managed cluster (the evaluators need it).
	ClusterNamespaceOnly bool
	// HubRetryDelay is the pause before a failed hub connection is
	// rebuilt; zero means DefaultRetryDelay.
	HubRetryDelay time.Duration
	// LeaseInterval is the renewal period of the agent's Leases; zero means
	// lease's default.
	LeaseInterval time.Duration
	// Clock stamps the compliance events the agent records, whose times
	// are its reports' times on the hub (status.details); nil means the
	// machine's clock. Tests pass an offset clock to run an agent whose
	// clock is wrong.
	Clock clock.PassiveClock
	// TemplateFuncDenylist are the template functions the managed
	// cluster's templates are denied, besides those the template library
	// always denies (OCM's --template-function-denylist).
	TemplateFuncDenylist []string
	// OperatorPolicyHistoryLength bounds the status.history of
	// OperatorPolicies; below 1 it is 10, as in OCM.
	OperatorPolicyHistoryLength int
}

// instance is Instance with its default applied.
func (o Options) instance() string {
	if o.Instance != "" {
		return o.Instance
	}
	if host, err := os.Hostname(); err == nil {
		return host
	}
	return Component
}

// LocalPolicyNamespace is where, besides the cluster namespace, the agent
// evaluates the ConfigurationPolicies, OperatorPolicies and
// CertificatePolicies that a cluster administrator writes on the managed
// cluster itself: OCM's namespace for them (config-policy-controller's
// --enable-ocm-policy-namespace, on by default).
const LocalPolicyNamespace = "open-cluster-management-policies"

// ManagerOptions are the options of the managed cluster's manager: Canopy's
// scheme, and a cache that holds no managedFields (no controller reads
// them), compliance events and Policies of the cluster namespace only, and
// policy templates of the cluster namespace and LocalPolicyNamespace only.
// Events are written and read there; templates are evaluated only there,
// as OCM's controllers do: a ConfigurationPolicy someone creates in another
// namespace is not enforced with the agent's rights. Callers add serving
// options.
func ManagerOptions(opts Options) manager.Options {
	mo := manager.Options{Scheme: scheme.New()}
	mo.Cache.DefaultTransform = cache.TransformStripManagedFields()
	clusterNamespace := cache.ByObject{Namespaces: map[string]cache.Config{opts.ClusterName: {}}}
	templateNamespaces := cache.ByObject{Namespaces: map[string]cache.Config{opts.ClusterName: {}, LocalPolicyNamespace: {}}}
	mo.Cache.ByObject = map[client.Object]cache.ByObject{
		&corev1.Event{}:                 clusterNamespace,
		&policyv1.Policy{}:              clusterNamespace,
		&policyv1.ConfigurationPolicy{}: templateNamespaces,
		&policyv1.CertificatePolicy{}:   templateNamespaces,
		&policyv1beta1.OperatorPolicy{}: templateNamespaces,
	}
	if opts.ClusterNamespaceOnly {
		mo.Cache.DefaultNamespaces = map[string]cache.Config{opts.ClusterName: {}}
	}
	return mo
}

// Setup adds the whole agent to mgr, the managed cluster's manager built
// from ManagerOptions: the controllers of the managed cluster, the hub
// connection (Runner, with specsync, statussync's hub side,
// secretsync and the hub Lease) and the install Lease.
//
// Note: the hub has a manager of its own, run and retried by the Runner,
// so that an unreachable hub never stops local enforcement (see
// pkg/spoke/doc.go).
func Setup(_ context.Context, mgr ctrl.Manager, opts Options) error {
	hub := &Runner{
		HubConfig: opts.HubConfig, ClusterNamespace: opts.ClusterName, Scheme: mgr.GetScheme(), Managed: mgr,
		RetryDelay: opts.HubRetryDelay, LeaseInterval: opts.LeaseInterval,
	}
	if err := mgr.Add(hub); err != nil {
		return fmt.Errorf("adding the hub connection: %w", err)
	}
	if err := addInstallLease(mgr, opts); err != nil {
		return err
	}
	return setupManaged(mgr, opts)
}

// setupManaged adds the controllers that work on the managed cluster,
// sharing one compliance event recorder so that they all see the same last
// event of each template.
func setupManaged(mgr ctrl.Manager, opts Options) error {
	var namespace string // every namespace, unless restricted
	if opts.ClusterNamespaceOnly {
		namespace = opts.ClusterName
	}
	ss := &statussync.Reconciler{ManagedClient: mgr.GetClient(), Namespace: namespace}
	if err := ss.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up statussync: %w", err)
	}
	// statussync is handed each compliance event as it is written, without
	// waiting for the event's informer (which holds the cluster namespace's,
	// ManagerOptions): one round trip less per dependency link.
	recorder := compliance.NewRecorder(ss.Writer(mgr.GetClient(), opts.ClusterName), mgr.GetAPIReader(),
		compliance.EventSource{Component: Component, Instance: opts.instance()})
	if opts.Clock != nil {
		recorder.WithClock(opts.Clock)
	}
	ts := &templatesync.Reconciler{ManagedClient: mgr.GetClient(), Recorder: recorder, Namespace: namespace}
	if err := ts.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up templatesync: %w", err)
	}
	evaluators := opts.Evaluators
	if evaluators == nil {
		evaluators = func(mgr ctrl.Manager, rec *compliance.Recorder) error {
			return setupEvaluators(mgr, rec, opts)
		}
	}
	if err := evaluators(mgr, recorder); err != nil {
		return fmt.Errorf("setting up evaluators: %w", err)
	}
	return nil
}

// Evaluators registers the policy template evaluators that ship with the
// agent: ConfigurationPolicy, OperatorPolicy, CertificatePolicy, the
// hierarchical syncer (HierarchyPolicy) and the reporter of Gatekeeper's
// audit results (its constraints and ConstraintTemplates, which Gatekeeper
// evaluates). pkg/templatekinds lists the same
// kinds for the messages about the others. Their templates are denied only
// the functions the template library always denies.
func Evaluators(mgr ctrl.Manager, rec *compliance.Recorder) error {
	return setupEvaluators(mgr, rec, Options{})
}

// setupEvaluators is Evaluators as opts tune them: the template functions
// denied to ConfigurationPolicy and OperatorPolicy templates, and the
// length of an OperatorPolicy's history.
func setupEvaluators(mgr ctrl.Manager, rec *compliance.Recorder, opts Options) error {
	cp := &configpolicy.Reconciler{
		ManagedClient: mgr.GetClient(), ManagedReader: mgr.GetAPIReader(), Recorder: rec, TemplateFuncDenylist: opts.TemplateFuncDenylist,
	}
	if err := cp.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up configpolicy: %w", err)
	}
	op := &operatorpolicy.Reconciler{ManagedClient: mgr.GetClient(), ManagedReader: mgr.GetAPIReader(), Recorder: rec,
		TemplateFuncDenylist: opts.TemplateFuncDenylist, MaxHistoryLength: opts.OperatorPolicyHistoryLength}
	if err := op.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up operatorpolicy: %w", err)
	}
	cert := &certpolicy.Reconciler{ManagedClient: mgr.GetClient(), ManagedReader: mgr.GetAPIReader(), Recorder: rec}
	if err := cert.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up certpolicy: %w", err)
	}
	gk := &gatekeeper.Reconciler{ManagedClient: mgr.GetClient(), ManagedReader: mgr.GetAPIReader(), Recorder: rec}
	if err := gk.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up gatekeeper: %w", err)
	}
	hp := &syncer.Reconciler{ManagedClient: mgr.GetClient(), ManagedReader: mgr.GetAPIReader(), Recorder: rec}
	if err := hp.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up syncer: %w", err)
	}
	return nil
}

// NoEvaluators registers no evaluator: for tests of the agent's plumbing,
// where templates are never evaluated.
func NoEvaluators(ctrl.Manager, *compliance.Recorder) error { return nil }

// addInstallLease renews the addon Lease in the agent's install namespace on
// the managed cluster, where OCM's klusterlet reads it to report the addon's
// health. Outside OCM there is no install namespace and no such Lease.
func addInstallLease(mgr ctrl.Manager, opts Options) error {
	if opts.InstallNamespace == "" {
		return nil
	}
	// Note: an uncached client: the Lease is written, never watched.
	writer, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme()})
	if err != nil {
		return fmt.Errorf("creating the lease client: %w", err)
	}
	return mgr.Add(&lease.Updater{
		Writer: writer, Namespace: opts.InstallNamespace, Holder: opts.instance(), Interval: opts.LeaseInterval,
	})
}
