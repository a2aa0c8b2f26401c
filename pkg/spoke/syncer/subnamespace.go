package syncer

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
	"github.com/canopy-policy/canopy/pkg/statuspatch"
)

// +kubebuilder:rbac:groups=hierarchy.canopy.io,resources=subnamespaces,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=hierarchy.canopy.io,resources=subnamespaces/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=hierarchy.canopy.io,resources=subnamespaces/finalizers,verbs=update

// SubNamespaceFinalizer holds a SubNamespace until its child namespace is
// deleted (when the child is still its own).
const SubNamespaceFinalizer = hierarchyv1alpha1.GroupName + "/subnamespace"

// Condition type and reasons of SubNamespace.
const (
	// ConditionReady is True when the child namespace exists and is this
	// SubNamespace's.
	ConditionReady = "Ready"
	// ReasonCreated: the child namespace exists with the right parent.
	ReasonCreated = "Created"
	// ReasonNotInTree: the SubNamespace's namespace is neither a root nor a
	// sub-namespace; label it hierarchy.canopy.io/type=root.
	ReasonNotInTree = "ParentNotInTree"
	// ReasonConflict: a namespace of that name exists with another parent.
	ReasonConflict = "Conflict"
)

// SubNamespaceReconciler creates the child namespace of each SubNamespace,
// and deletes it with the SubNamespace while its parent label still names
// the SubNamespace's namespace. It is the only writer of SubNamespace
// status and finalizers; Reconciler.SetupWithManager registers it.
type SubNamespaceReconciler struct {
	// ManagedClient reads (cached) and writes namespaces and SubNamespaces.
	ManagedClient client.Client
}

// SetupWithManager registers the controller.
func (r *SubNamespaceReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("subnamespace").
		For(&hierarchyv1alpha1.SubNamespace{}).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(subNamespaceOf)).
		Complete(r)
}

// subNamespaceOf maps a namespace to the SubNamespace that would own it.
func subNamespaceOf(_ context.Context, ns client.Object) []reconcile.Request {
	parent := ns.GetLabels()[hierarchyv1alpha1.ParentLabel]
	if parent == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: parent, Name: ns.GetName()}}}
}

// Reconcile creates or deletes one SubNamespace's child namespace.
func (r *SubNamespaceReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	sub := &hierarchyv1alpha1.SubNamespace{}
	if err := r.ManagedClient.Get(ctx, req.NamespacedName, sub); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if sub.DeletionTimestamp.IsZero() && !controllerutil.ContainsFinalizer(sub, SubNamespaceFinalizer) {
		orig := sub.DeepCopy()
		controllerutil.AddFinalizer(sub, SubNamespaceFinalizer)
		return ctrl.Result{}, client.IgnoreNotFound(r.ManagedClient.Patch(ctx, sub, client.MergeFrom(orig)))
	}
	status := statuspatch.Snapshot(r.ManagedClient, sub, func(s *hierarchyv1alpha1.SubNamespace) any { return s.Status },
		statuspatch.SkipWhen(deleting))
	defer status.Apply(ctx, &retErr) // status is written once, here, whatever happens below
	if !sub.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.reconcileDelete(ctx, sub)
	}
	return ctrl.Result{}, r.reconcileNormal(ctx, sub)
}

// deleting tells a SubNamespace being deleted, whose status is not written:
// it is going.
func deleting(_, sub *hierarchyv1alpha1.SubNamespace, _ error) bool {
	return !sub.DeletionTimestamp.IsZero()
}

func (r *SubNamespaceReconciler) reconcileNormal(ctx context.Context, sub *hierarchyv1alpha1.SubNamespace) error {
	parent := &corev1.Namespace{}
	if err := r.ManagedClient.Get(ctx, client.ObjectKey{Name: sub.Namespace}, parent); err != nil {
		return fmt.Errorf("reading namespace %s: %w", sub.Namespace, err)
	}
	if parent.Labels[hierarchyv1alpha1.TypeLabel] != hierarchyv1alpha1.TypeRoot && parent.Labels[hierarchyv1alpha1.ParentLabel] == "" {
		setReady(sub, false, ReasonNotInTree, "Namespace "+sub.Namespace+" is neither a root nor a sub-namespace: label it "+
			hierarchyv1alpha1.TypeLabel+"="+hierarchyv1alpha1.TypeRoot+".")
		return nil
	}
	child := &corev1.Namespace{}
	err := r.ManagedClient.Get(ctx, client.ObjectKey{Name: sub.Name}, child)
	switch {
	case apierrors.IsNotFound(err):
		child = childNamespace(sub)
		if err := r.ManagedClient.Create(ctx, child); err != nil {
			return fmt.Errorf("creating namespace %s: %w", sub.Name, err)
		}
		ctrl.LoggerFrom(ctx).Info("Created sub-namespace", "namespace", sub.Name, "parent", sub.Namespace)
	case err != nil:
		return fmt.Errorf("reading namespace %s: %w", sub.Name, err)
	case child.Labels[hierarchyv1alpha1.ParentLabel] != sub.Namespace:
		setReady(sub, false, ReasonConflict, "Namespace "+sub.Name+" exists and is not a sub-namespace of "+sub.Namespace+
			"; choose another name.")
		return nil
	default:
		want := child.DeepCopy()
		want.Labels, want.Annotations = mergeMaps(want.Labels, sub.Spec.Labels), mergeMaps(want.Annotations, sub.Spec.Annotations)
		if !maps.Equal(want.Labels, child.Labels) || !maps.Equal(want.Annotations, child.Annotations) {
			if err := r.ManagedClient.Patch(ctx, want, client.MergeFrom(child)); err != nil {
				return fmt.Errorf("updating namespace %s: %w", sub.Name, err)
			}
		}
	}
	sub.Status.Namespace = sub.Name
	setReady(sub, true, ReasonCreated, "Namespace "+sub.Name+" is a sub-namespace of "+sub.Namespace+".")
	return nil
}

// reconcileDelete deletes the child namespace if it is still this
// SubNamespace's, then lets the SubNamespace go.
func (r *SubNamespaceReconciler) reconcileDelete(ctx context.Context, sub *hierarchyv1alpha1.SubNamespace) error {
	child := &corev1.Namespace{}
	err := r.ManagedClient.Get(ctx, client.ObjectKey{Name: sub.Name}, child)
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("reading namespace %s: %w", sub.Name, err)
	}
	if err == nil && child.Labels[hierarchyv1alpha1.ParentLabel] == sub.Namespace && child.DeletionTimestamp.IsZero() {
		if err := r.ManagedClient.Delete(ctx, child, client.Preconditions{UID: &child.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting namespace %s: %w", sub.Name, err)
		}
		ctrl.LoggerFrom(ctx).Info("Deleted sub-namespace", "namespace", sub.Name, "subNamespace", klog.KObj(sub))
	}
	orig := sub.DeepCopy()
	controllerutil.RemoveFinalizer(sub, SubNamespaceFinalizer)
	return client.IgnoreNotFound(r.ManagedClient.Patch(ctx, sub, client.MergeFrom(orig)))
}

// childNamespace is the namespace a SubNamespace creates.
func childNamespace(sub *hierarchyv1alpha1.SubNamespace) *corev1.Namespace {
	labels := mergeMaps(nil, sub.Spec.Labels)
	labels[hierarchyv1alpha1.ParentLabel] = sub.Namespace
	labels[hierarchyv1alpha1.ManagedByLabel] = hierarchyv1alpha1.ManagedByValue
	annotations := mergeMaps(nil, sub.Spec.Annotations)
	annotations[hierarchyv1alpha1.SourceAnnotation] = hierarchyv1alpha1.SubNamespaceKind + " " + sub.Namespace + "/" + sub.Name
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: sub.Name, Labels: labels, Annotations: annotations}}
}

func mergeMaps(into, from map[string]string) map[string]string {
	if into == nil {
		into = map[string]string{}
	}
	maps.Copy(into, from)
	return into
}

func setReady(sub *hierarchyv1alpha1.SubNamespace, ok bool, reason, msg string) {
	meta.SetStatusCondition(&sub.Status.Conditions, metav1.Condition{Type: ConditionReady, Status: boolStatus(ok),
		ObservedGeneration: sub.Generation, Reason: reason, Message: msg})
}
