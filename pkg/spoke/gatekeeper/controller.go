package gatekeeper

import (
	"context"
	"errors"
	"fmt"

	depclient "github.com/stolostron/kubernetes-dependency-watches/client"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/compliance"
	"github.com/canopy-policy/canopy/pkg/depwatch"
	"github.com/canopy-policy/canopy/pkg/templatekinds"
)

// Name is the controller's name.
const Name = "gatekeeper"

// WebhookName is the ValidatingWebhookConfiguration Gatekeeper installs, and
// WebhookEntry the webhook in it that validates against constraints (OCM's
// gatekeepersync.GatekeeperWebhookName and the entry it looks for).
const (
	WebhookName  = "gatekeeper-validating-webhook-configuration"
	WebhookEntry = "validation.gatekeeper.sh"
)

var (
	crdGVK     = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}
	webhookGVK = schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingWebhookConfiguration"}
)

// +kubebuilder:rbac:groups=policy.open-cluster-management.io,resources=policies,verbs=get;list;watch
// +kubebuilder:rbac:groups=templates.gatekeeper.sh;constraints.gatekeeper.sh,resources=*,verbs=get;list;watch
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,resourceNames=gatekeeper-validating-webhook-configuration,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;list

// Reconciler reports the compliance of the Gatekeeper templates of local
// Policies.
type Reconciler struct {
	// ManagedClient reads Policies (cached).
	ManagedClient client.Client
	// ManagedReader reads constraints from the API server, with the
	// managedFields that say when their spec last changed (the caches strip
	// them).
	ManagedReader client.Reader
	// Recorder records compliance events on the parent Policies; share the
	// one of templatesync and the evaluators.
	Recorder *compliance.Recorder
	watches  *depwatch.Lifecycle // set by SetupWithManager
}

// SetupWithManager registers the controller and its watcher of Gatekeeper
// objects with mgr, the managed cluster's manager.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	watches, src, err := depwatch.Setup(mgr, depclient.Options{})
	if err != nil {
		return err
	}
	r.watches = watches
	if r.ManagedReader == nil {
		r.ManagedReader = mgr.GetAPIReader()
	}
	relevant := predicate.NewPredicateFuncs(func(o client.Object) bool {
		p, ok := o.(*policyv1.Policy)
		return ok && len(gatekeeperTemplates(p)) > 0
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		// Note: every change of such a Policy, its status too: a status
		// showing something else than the last event is recorded again
		// (RecordOptions.Visible).
		For(&policyv1.Policy{}, builder.WithPredicates(relevant)).
		WatchesRawSource(src).
		Complete(r)
}

// Reconcile records the compliance of each Gatekeeper template of one
// local Policy, from the status Gatekeeper wrote on its object.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	policy := &policyv1.Policy{}
	if err := r.ManagedClient.Get(ctx, req.NamespacedName, policy); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, r.forget(ctx, req.NamespacedName)
		}
		return ctrl.Result{}, fmt.Errorf("getting policy %s: %w", req, err)
	}
	if !policy.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.forget(ctx, req.NamespacedName)
	}
	release, err := r.watches.Hold(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	defer release()
	id := watcherID(req.NamespacedName)
	watcher := r.watches.Watcher()
	if err := watcher.StartQueryBatch(id); err != nil {
		return ctrl.Result{}, fmt.Errorf("starting the watch batch of policy %s: %w", req, err)
	}
	defer func() { // the batch's end drops the watches this reconcile did not use
		if err := watcher.EndQueryBatch(id); err != nil {
			retErr = errors.Join(retErr, fmt.Errorf("ending the watch batch of policy %s: %w", req, err))
		}
	}()
	run := &reconcileRun{Reconciler: r, watcher: watcher, id: id, policy: policy}
	var errs []error // one broken template must not block the others
	for _, t := range gatekeeperTemplates(policy) {
		if err := run.report(ctx, t); err != nil {
			errs = append(errs, fmt.Errorf("template %s: %w", t.GetName(), err))
		}
	}
	return ctrl.Result{}, errors.Join(errs...)
}

// forget stops the watches of a Policy that is gone.
func (r *Reconciler) forget(ctx context.Context, key types.NamespacedName) error {
	release, running := r.watches.TryHold()
	if !running {
		return nil // the watcher holds no watch
	}
	defer release()
	if err := r.watches.Watcher().RemoveWatcher(watcherID(key)); err != nil {
		return fmt.Errorf("removing the watches of policy %s: %w", key, err)
	}
	ctrl.LoggerFrom(ctx).V(4).Info("Stopped watching the Gatekeeper objects of a deleted policy", "policy", key)
	return nil
}

// reconcileRun is the state of one Reconcile.
type reconcileRun struct {
	*Reconciler
	watcher depclient.DynamicWatcher
	id      depclient.ObjectIdentifier
	policy  *policyv1.Policy
	// webhook is whether Gatekeeper's validating webhook is configured,
	// read at most once: nil until read.
	webhook *bool
}

// report records the compliance of the Gatekeeper template t (its
// objectDefinition), when its object exists and is the Policy's. A
// template without an object is templatesync's to report (Gatekeeper not
// installed, dependencies unmet, ...).
func (r *reconcileRun) report(ctx context.Context, t *unstructured.Unstructured) error {
	obj, err := r.read(ctx, t)
	if obj == nil || err != nil {
		return err
	}
	var res Result
	if templatekinds.IsConstraint(obj.GroupVersionKind().GroupKind()) {
		if res, err = r.constraintCompliance(ctx, obj); err != nil {
			return err
		}
	} else {
		res = TemplateCompliance(obj)
	}
	return r.record(ctx, obj, res)
}

// read returns the object of template t, through the watcher (so that
// its changes, and its kind's CRD appearing, reconcile the Policy again):
// nil when it, or its kind, does not exist, or when it is not the Policy's.
func (r *reconcileRun) read(_ context.Context, t *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	gvk := t.GroupVersionKind()
	crdName := templatekinds.ConstraintTemplateCRD
	if templatekinds.IsConstraint(gvk.GroupKind()) {
		crdName = templatekinds.ConstraintCRDName(gvk.Kind)
	}
	crd, err := r.watcher.Get(r.id, crdGVK, "", crdName)
	if crd == nil || err != nil {
		return nil, err
	}
	obj, err := r.watcher.Get(r.id, gvk, "", t.GetName())
	if errors.Is(err, depclient.ErrNoVersionedResource) {
		return nil, nil // the CRD does not serve this version: templatesync says so
	}
	if obj == nil || err != nil {
		return nil, err
	}
	labels := obj.GetLabels()
	if labels[policyv1.PolicyLabel] != r.policy.Name || labels[policyv1.ClusterNamespaceLabel] != r.policy.Namespace {
		return nil, nil // not this Policy's: templatesync reports the conflict
	}
	return obj, nil
}

// constraintCompliance reads the constraint obj again from the API server,
// for the managedFields that say when its spec last changed, and returns
// its compliance.
func (r *reconcileRun) constraintCompliance(ctx context.Context, obj *unstructured.Unstructured) (Result, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(obj.GroupVersionKind())
	if err := r.ManagedReader.Get(ctx, client.ObjectKeyFromObject(obj), live); err != nil {
		if apierrors.IsNotFound(err) {
			return Result{}, nil // deleted meanwhile: its watch reconciles again
		}
		return Result{}, fmt.Errorf("reading constraint %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	in := ConstraintInput{Object: live, LastChange: LastChange(live)}
	if enforcementAction(live) == "deny" {
		enabled, err := r.webhookEnabled()
		if err != nil {
			return Result{}, err
		}
		in.WebhookEnabled = enabled
	}
	return ConstraintCompliance(in), nil
}

// webhookEnabled reports whether Gatekeeper's validating webhook is
// configured, as OCM's webhookEnabled does, watching its configuration.
func (r *reconcileRun) webhookEnabled() (bool, error) {
	if r.webhook != nil {
		return *r.webhook, nil
	}
	cfg, err := r.watcher.Get(r.id, webhookGVK, "", WebhookName)
	if err != nil {
		return false, fmt.Errorf("reading ValidatingWebhookConfiguration %s: %w", WebhookName, err)
	}
	enabled := false
	if cfg != nil {
		hooks, _, _ := unstructured.NestedSlice(cfg.Object, "webhooks")
		for _, h := range hooks {
			if m, ok := h.(map[string]any); ok && m["name"] == WebhookEntry {
				enabled = true
			}
		}
	}
	r.webhook = &enabled
	return enabled, nil
}

// record records res for the Gatekeeper object obj on the Policy: about
// that object (its UID) and the version templatesync wrote
// (compliance.TemplateHashAnnotation), so that statussync counts it for
// the object that exists now and the hub sees the current spec evaluated.
// A result with no state (the object went away) records nothing.
func (r *reconcileRun) record(ctx context.Context, obj *unstructured.Unstructured, res Result) error {
	if res.State == "" {
		return nil
	}
	name := obj.GetName()
	c := compliance.Compliance{Template: types.NamespacedName{Namespace: r.policy.Namespace, Name: name}, State: res.State, Message: res.Message}
	gvk := obj.GroupVersionKind()
	related := &corev1.ObjectReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: name, UID: obj.GetUID()}
	opts := compliance.RecordOptions{Related: related, Visible: visible(r.policy, name),
		Version: obj.GetAnnotations()[compliance.TemplateHashAnnotation]}
	emitted, err := r.Recorder.Record(ctx, compliance.ParentFromPolicy(r.policy), c, opts)
	if err != nil {
		return fmt.Errorf("recording the compliance of %s %s: %w", gvk.Kind, name, err)
	}
	if emitted {
		ctrl.LoggerFrom(ctx).Info("Compliance changed", "policy", klog.KObj(r.policy), "kind", gvk.Kind,
			"template", name, "compliant", res.State)
	}
	return nil
}

// visible returns the newest entry of template's history in policy's
// status, as statussync wrote it: nil when there is none.
func visible(policy *policyv1.Policy, template string) *policyv1.ComplianceHistory {
	for i := range policy.Status.Details {
		if d := &policy.Status.Details[i]; d.TemplateMeta.Name == template && len(d.History) > 0 {
			return &d.History[0]
		}
	}
	return nil
}

// gatekeeperTemplates returns the objectDefinitions of policy's templates
// of a Gatekeeper kind that have a name.
func gatekeeperTemplates(policy *policyv1.Policy) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, pt := range policy.Spec.PolicyTemplates {
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(pt.ObjectDefinition.Raw); err != nil || obj.GetName() == "" {
			continue
		}
		if templatekinds.IsGatekeeper(obj.GroupVersionKind().GroupKind()) {
			out = append(out, obj)
		}
	}
	return out
}

func watcherID(key types.NamespacedName) depclient.ObjectIdentifier {
	return depclient.ObjectIdentifier{
		Group: policyv1.GroupName, Version: policyv1.GroupVersion.Version, Kind: "Policy",
		Namespace: key.Namespace, Name: key.Name,
	}
}
