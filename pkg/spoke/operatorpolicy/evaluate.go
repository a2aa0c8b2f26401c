package operatorpolicy

import (
	"context"
	"errors"
	"fmt"
	"slices"

	depclient "github.com/stolostron/kubernetes-dependency-watches/client"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
)

// reader reads OLM's objects. The controller's reads through the dynamic
// watcher, which re-evaluates the policy when one of them changes.
type reader interface {
	// get returns the object, nil when it does not exist.
	get(gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, error)
	// list returns the objects of namespace ns ("" for cluster scope) sel
	// selects.
	list(gvk schema.GroupVersionKind, ns string, sel labels.Selector) ([]unstructured.Unstructured, error)
}

// watchReader reads through the dynamic watcher within the policy's query
// batch.
type watchReader struct {
	watcher depclient.DynamicWatcher
	id      depclient.ObjectIdentifier
}

func (w watchReader) get(gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, error) {
	obj, err := w.watcher.Get(w.id, gvk, ns, name)
	if err != nil {
		return nil, fmt.Errorf("reading %s %s/%s: %w", gvk.Kind, ns, name, err)
	}
	return obj, nil
}

func (w watchReader) list(gvk schema.GroupVersionKind, ns string, sel labels.Selector) ([]unstructured.Unstructured, error) {
	objs, err := w.watcher.List(w.id, gvk, ns, sel)
	if err != nil {
		return nil, fmt.Errorf("listing %s in %q: %w", gvk.Kind, ns, err)
	}
	return objs, nil
}

// evaluation is one evaluation of one OperatorPolicy: what it read and
// decided, and whether it changed the cluster.
type evaluation struct {
	policy *policyv1beta1.OperatorPolicy
	read   reader
	// dynamic writes OLM's objects and reads PackageManifests (which
	// cannot be watched); nil in tests that never write.
	dynamic dynamic.Interface
	// opGroupLocks serialise the creation of OperatorGroups by namespace.
	opGroupLocks *namespaceLocks
	// policies lists the OperatorPolicies, for overlaps.
	policies client.Reader
	now      metav1.Time
	// templates resolves the managed-cluster templates of the spec; nil
	// in tests that resolve none.
	templates *templateResolver
	// versions are spec.versions, resolved and canonical.
	versions []string
	// packageManifest is the package's PackageManifest, nil when there is
	// none.
	packageManifest *unstructured.Unstructured
	// remediated says the evaluation changed the cluster.
	remediated bool
	// recheck says the evaluation waits on something that is not
	// watched (a PackageManifest).
	recheck bool
}

// set records a condition and the related objects of its kind.
func (e *evaluation) set(c metav1.Condition, objs ...policyv1.RelatedObject) {
	setStatus(e.policy, e.now, c, objs...)
}

func (e *evaluation) enforce() bool  { return e.policy.Spec.RemediationAction.IsEnforce() }
func (e *evaluation) musthave() bool { return e.policy.Spec.ComplianceType.IsMustHave() }

// run evaluates the policy, and under enforce makes the cluster comply, in
// OCM's order: OperatorGroup, Subscription, InstallPlan, CSV, CRDs,
// Deployments, CatalogSource. Each step sets its condition.
func (e *evaluation) run(ctx context.Context) error {
	sub, og, err := e.build(ctx)
	if err != nil {
		return err
	}
	done, err := e.handleExistingInstallation(ctx, sub, og)
	if errors.Is(err, depclient.ErrNoVersionedResource) {
		e.noOLM()
		return nil
	}
	if done || err != nil {
		return err
	}
	ogCorrect, err := e.handleOpGroup(ctx, og, sub)
	if errors.Is(err, depclient.ErrNoVersionedResource) {
		e.noOLM()
		return nil
	}
	if err != nil {
		return fmt.Errorf("handling the OperatorGroup: %w", err)
	}
	found, err := e.handleSubscription(ctx, sub, ogCorrect)
	if err != nil {
		return fmt.Errorf("handling the Subscription: %w", err)
	}
	if err := e.handleInstallPlan(ctx, found); err != nil {
		return fmt.Errorf("handling the InstallPlans: %w", err)
	}
	csv, err := e.handleCSV(ctx, found)
	if err != nil {
		return fmt.Errorf("handling the ClusterServiceVersions: %w", err)
	}
	if err := e.checkDeprecations(found, csv); err != nil {
		return err
	}
	if err := e.checkMinorChannel(found); err != nil {
		return err
	}
	if err := e.handleCRDs(ctx, found); err != nil {
		return fmt.Errorf("handling the CustomResourceDefinitions: %w", err)
	}
	if err := e.handleDeployments(csv); err != nil {
		return fmt.Errorf("handling the Deployments: %w", err)
	}
	return e.handleCatalogSource(found)
}

// noOLM reports a cluster that does not serve OLM's kinds, which the
// evaluator cannot create: it checks again later, as CRDs are not watched.
func (e *evaluation) noOLM() {
	e.recheck = true
	e.set(validationCond([]error{errNoOLM}))
	for _, kind := range []string{kindOpGroup, kindSubscription, kindInstallPlan, kindCatalog} {
		e.set(invalidCausingUnknownCond(kind))
	}
}

// errNoOLM is Canopy's message (OCM has none) for a cluster without OLM.
var errNoOLM = errors.New("the OLM kinds (operators.coreos.com) are not served on this cluster: " +
	"install the Operator Lifecycle Manager")

// build reads the Subscription and OperatorGroup the policy wants and
// validates the spec, setting ValidPolicySpec. Nil results mean the
// policy cannot say what it wants; the steps then report Unknown.
func (e *evaluation) build(ctx context.Context) (*desiredSub, *desiredOpGroup, error) {
	versions, err := e.resolveVersions()
	if err != nil {
		e.set(validationCond([]error{err}))
		return nil, nil, nil
	}
	e.versions = versions
	raw, err := e.resolveRaw(e.policy.Spec.Subscription.Raw)
	if err != nil {
		e.set(validationCond([]error{fmt.Errorf("could not build subscription: %w", err)}))
		return nil, nil, nil
	}
	sub, err := buildSubscription(e.policy, raw, e.versions)
	if err != nil {
		e.set(validationCond([]error{err}))
		return nil, nil, nil
	}
	if sub, err = e.withDefaults(ctx, sub); err != nil || sub == nil {
		return nil, nil, err
	}
	og, err := e.buildOperatorGroup(sub.namespace)
	if err != nil {
		e.set(validationCond([]error{err}))
		return sub, nil, nil
	}
	ns, err := e.read.get(namespaceGVK, "", sub.namespace)
	if err != nil {
		return nil, nil, err
	}
	if ns == nil && e.musthave() {
		e.set(validationCond([]error{fmt.Errorf("the operator namespace ('%v') does not exist", sub.namespace)}))
		return sub, og, nil
	}
	overlap, err := e.checkOverlap(ctx, sub)
	if err != nil || overlap != nil {
		if overlap != nil {
			e.set(validationCond([]error{overlap}))
		}
		return nil, nil, err
	}
	e.set(validationCond(nil))
	return sub, og, nil
}

// withDefaults fills in what the policy leaves of the Subscription to the
// PackageManifest or the Subscription on the cluster; nil when it cannot.
//
// The PackageManifest is read whether or not defaults are needed: the
// deprecations and newer channels are read from it too, as in OCM.
func (e *evaluation) withDefaults(ctx context.Context, sub *desiredSub) (*desiredSub, error) {
	pm, err := e.getPackageManifest(ctx, sub.spec.Package)
	if err != nil {
		e.set(validationCond([]error{err}))
		return nil, fmt.Errorf("reading the PackageManifest %s: %w", sub.spec.Package, err)
	}
	e.packageManifest = pm
	if s := sub.spec; s.Channel != "" && s.CatalogSource != "" && s.CatalogSourceNamespace != "" && sub.namespace != "" {
		return sub, nil
	}
	known := knownSubscriptionNamespace(e.policy)
	var found *unstructured.Unstructured
	if ns := cmpOr(sub.namespace, known); pm == nil && ns != "" {
		if found, err = e.read.get(subscriptionGVK, ns, sub.name); err != nil {
			return nil, err
		}
		sub.namespace = ns
	}
	if err := applySubscriptionDefaults(sub, pm, found, known); err != nil {
		e.recheck = e.recheck || errors.Is(err, errNoPackageManifest)
		e.set(validationCond([]error{err}))
		return nil, nil
	}
	if sub.namespace == "" {
		e.set(validationCond([]error{errors.New("namespace is required in spec.subscription")}))
		return nil, nil
	}
	return sub, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// knownSubscriptionNamespace is the namespace of the one Subscription the
// status relates, to adopt it when the policy names no namespace.
func knownSubscriptionNamespace(policy *policyv1beta1.OperatorPolicy) string {
	var namespaces []string
	for _, rel := range policy.Status.RelatedObjects {
		if rel.Object.Kind == subscriptionGVK.Kind {
			namespaces = append(namespaces, rel.Object.Metadata.Namespace)
		}
	}
	if len(namespaces) != 1 {
		return ""
	}
	return namespaces[0]
}

// getPackageManifest reads the package's PackageManifest, nil when there
// is none or no PackageManifest API.
func (e *evaluation) getPackageManifest(ctx context.Context, pkg string) (*unstructured.Unstructured, error) {
	if e.dynamic == nil {
		return nil, nil
	}
	// Note: the namespace has no meaning to the PackageManifest API but is
	// required; OCM reads "default" too.
	pm, err := e.dynamic.Resource(packageManifestGVR).Namespace("default").Get(ctx, pkg, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return pm, err
}

// checkOverlap sets resolvedSubscriptionLabel and overlappingPolicies, and
// returns the validation error of an enforced policy whose Subscription
// another enforced policy of this cluster manages too.
func (e *evaluation) checkOverlap(ctx context.Context, sub *desiredSub) (error, error) {
	st := &e.policy.Status
	st.ResolvedSubscriptionLabel = opLabelName(sub.name, sub.namespace)
	if !e.enforce() || e.policies == nil {
		st.OverlappingPolicies = nil
		return nil, nil
	}
	list := &policyv1beta1.OperatorPolicyList{}
	if err := e.policies.List(ctx, list, client.InNamespace(e.policy.Namespace)); err != nil {
		return nil, fmt.Errorf("listing OperatorPolicies: %w", err)
	}
	overlappers := []string{e.policy.Name + "." + e.policy.Namespace}
	for _, other := range list.Items {
		if other.Name == e.policy.Name || other.Status.ResolvedSubscriptionLabel != st.ResolvedSubscriptionLabel ||
			other.Spec.RemediationAction.IsInform() {
			continue
		}
		overlappers = append(overlappers, other.Name+"."+other.Namespace)
	}
	if len(overlappers) == 1 {
		st.OverlappingPolicies = nil
		return nil, nil
	}
	slices.Sort(overlappers)
	st.OverlappingPolicies = overlappers
	return overlapError(overlappers), nil
}

// create creates obj, and its namespace when that is missing.
func (e *evaluation) create(ctx context.Context, obj *unstructured.Unstructured) error {
	ctrl.LoggerFrom(ctx).Info("Creating an operator object", "kind", obj.GetKind(), "object", klog.KObj(obj))
	created, err := e.resource(obj).Create(ctx, obj, metav1.CreateOptions{})
	if apierrors.IsNotFound(err) && obj.GetNamespace() != "" {
		ns := newObject(namespaceGVK, "", obj.GetNamespace(), "", nil)
		delete(ns.Object, "spec")
		if _, err := e.dynamic.Resource(resources[namespaceGVK]).Create(ctx, ns, metav1.CreateOptions{}); err != nil &&
			!apierrors.IsAlreadyExists(err) {
			return err
		}
		created, err = e.resource(obj).Create(ctx, obj, metav1.CreateOptions{})
	}
	if err != nil {
		return err
	}
	e.remediated = true
	obj.Object = created.Object
	return nil
}

// update writes obj.
func (e *evaluation) update(ctx context.Context, obj *unstructured.Unstructured) error {
	ctrl.LoggerFrom(ctx).Info("Updating an operator object", "kind", obj.GetKind(), "object", klog.KObj(obj))
	updated, err := e.resource(obj).Update(ctx, obj, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	e.remediated = true
	obj.Object = updated.Object
	return nil
}

// remove deletes obj; an object already gone is not an error.
func (e *evaluation) remove(ctx context.Context, obj *unstructured.Unstructured) error {
	ctrl.LoggerFrom(ctx).Info("Deleting an operator object", "kind", obj.GetKind(), "object", klog.KObj(obj))
	err := e.resource(obj).Delete(ctx, obj.GetName(), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	e.remediated = true
	return nil
}

func (e *evaluation) resource(obj *unstructured.Unstructured) dynamic.ResourceInterface {
	gvr := resources[obj.GroupVersionKind()]
	if obj.GetNamespace() == "" {
		return e.dynamic.Resource(gvr)
	}
	return e.dynamic.Resource(gvr).Namespace(obj.GetNamespace())
}
