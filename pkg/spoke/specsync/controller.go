package specsync

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	replicas "github.com/canopy-policy/canopy/pkg/replica"
	"github.com/canopy-policy/canopy/pkg/spoke/internal/clusterns"
)

// Name is the controller's name.
const Name = "specsync"

// +kubebuilder:rbac:groups=policy.open-cluster-management.io,resources=policies,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch;create

// Reconciler copies hub replicas to local Policies: it reads replicas from
// the hub cache, which holds only the cluster namespace, and writes the
// managed cluster.
type Reconciler struct {
	clusterns.Clients
}

// SetupWithManager registers the controller with the hub manager mgr. It
// also watches local Policies in managed, so that a local Policy changed or
// deleted by hand is put back.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, managed cache.Cache) error {
	return r.PolicyController(mgr, managed, Name).
		Complete(r)
}

// Reconcile makes the local Policy req match the hub replica req.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	replica := &policyv1.Policy{}
	if err := r.HubClient.Get(ctx, req.NamespacedName, replica); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("getting replica %s: %w", req, err)
		}
		replica = nil
	}
	if replica != nil && replica.Labels[policyv1.RootPolicyLabel] == "" {
		replica = nil // not a replica: something else put it in the cluster namespace
	}
	local := &policyv1.Policy{}
	if err := r.ManagedClient.Get(ctx, req.NamespacedName, local); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("getting local policy %s: %w", req, err)
		}
		local = nil
	}
	if replica == nil || !replica.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.reconcileDelete(ctx, local)
	}
	return ctrl.Result{}, r.reconcileNormal(ctx, replica, local)
}

// reconcileDelete deletes the local copy of a replica that is gone. Only
// Policies that came from the hub (they carry the root-policy label) are
// deleted.
func (r *Reconciler) reconcileDelete(ctx context.Context, local *policyv1.Policy) error {
	if local == nil || !local.DeletionTimestamp.IsZero() {
		return nil
	}
	if _, synced := local.Labels[policyv1.RootPolicyLabel]; !synced {
		return nil
	}
	if err := r.ManagedClient.Delete(ctx, local, client.Preconditions{UID: &local.UID}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting local policy %s: %w", klog.KObj(local), err)
	}
	ctrl.LoggerFrom(ctx).Info("Deleted local policy", "policy", klog.KObj(local))
	return nil
}

func (r *Reconciler) reconcileNormal(ctx context.Context, replica, local *policyv1.Policy) error {
	if local == nil {
		if err := r.ensureNamespace(ctx, replica.Namespace); err != nil {
			return err
		}
		local = &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: replica.Namespace, Name: replica.Name}}
		copySpec(local, replica)
		if err := r.ManagedClient.Create(ctx, local); err != nil {
			return fmt.Errorf("creating local policy %s: %w", klog.KObj(local), err)
		}
		ctrl.LoggerFrom(ctx).Info("Created local policy", "policy", klog.KObj(local))
		return nil
	}
	if InSync(local, replica) {
		return nil
	}
	copySpec(local, replica)
	if err := r.ManagedClient.Update(ctx, local); err != nil {
		return fmt.Errorf("updating local policy %s: %w", klog.KObj(local), err)
	}
	ctrl.LoggerFrom(ctx).Info("Updated local policy", "policy", klog.KObj(local))
	return nil
}

func (r *Reconciler) ensureNamespace(ctx context.Context, name string) error {
	ns := &corev1.Namespace{}
	err := r.ManagedClient.Get(ctx, client.ObjectKey{Name: name}, ns)
	if !apierrors.IsNotFound(err) {
		return err
	}
	ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := r.ManagedClient.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

// InSync reports whether local already carries the replica's spec, labels
// and annotations, and its generation.
func InSync(local, replica *policyv1.Policy) bool {
	return equality.Semantic.DeepEqual(local.Spec, replica.Spec) &&
		equalMaps(local.Labels, replica.Labels) &&
		equalMaps(local.Annotations, localAnnotations(replica))
}

// copySpec copies what flows down from the hub: spec, labels, annotations,
// and the replica's generation, which statussync reports back once the
// local Policy is evaluated (status.evaluatedGeneration).
// Note: status never flows down; statussync writes it from local events.
func copySpec(local, replica *policyv1.Policy) {
	local.Spec = *replica.Spec.DeepCopy()
	local.Labels = copyMap(replica.Labels)
	local.Annotations = localAnnotations(replica)
}

// localAnnotations are the annotations of the local copy of replica: the
// replica's, and its metadata.generation (replicas.GenerationAnnotation).
func localAnnotations(replica *policyv1.Policy) map[string]string {
	out := copyMap(replica.Annotations)
	if out == nil {
		out = map[string]string{}
	}
	out[replicas.GenerationAnnotation] = strconv.FormatInt(replica.Generation, 10)
	return out
}

func copyMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
