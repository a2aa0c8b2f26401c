package secretsync

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/canopy-policy/canopy/pkg/templating"
)

// Name is the controller's name.
const Name = "secretsync"

// Note: create cannot be limited by resourceNames (the name is not known
// when it is authorized); every other verb is limited to the key.
//
// +kubebuilder:rbac:groups="",resources=secrets,verbs=create
// +kubebuilder:rbac:groups="",resources=secrets,resourceNames=policy-encryption-key,verbs=get;list;watch;update;delete

// KeyOnly restricts a cache's Secrets to the encryption key, so that a
// cache of Secrets lists and watches that one name, which RBAC can grant
// by resourceNames.
func KeyOnly() cache.ByObject {
	return cache.ByObject{Field: fields.OneTermEqualSelector("metadata.name", templating.EncryptionKeySecret)}
}

// NewKeyCluster returns the cluster at cfg seen through a cache that holds
// only the encryption key Secret of namespace (KeyOnly): the Reconciler
// reads the hub's key and the managed copy through two of them. Add them to
// the manager that runs the Reconciler, which starts their caches.
//
// Note: neither cluster's main cache is used, so that no informer on every
// Secret of the managed cluster is ever started for this, and a key the
// agent may not read on the hub delays no other controller (a watch waits
// for its whole cache to sync).
func NewKeyCluster(cfg *rest.Config, scheme *runtime.Scheme, namespace string) (cluster.Cluster, error) {
	c, err := cluster.New(cfg, func(o *cluster.Options) {
		o.Scheme = scheme
		o.Logger = ctrl.Log.WithName(Name)
		o.Cache = cache.Options{
			DefaultNamespaces: map[string]cache.Config{namespace: {}},
			ByObject:          map[client.Object]cache.ByObject{&corev1.Secret{}: KeyOnly()},
		}
	})
	if err != nil {
		return nil, fmt.Errorf("creating a client for the encryption key at %s: %w", cfg.Host, err)
	}
	return c, nil
}

// Reconciler copies the encryption key Secret from the hub cluster
// namespace to the managed cluster namespace.
type Reconciler struct {
	// HubClient reads the hub's key, from a NewKeyCluster cache of the hub.
	HubClient client.Client
	// ManagedClient reads the copy, from a NewKeyCluster cache of the
	// managed cluster, and writes it.
	ManagedClient client.Client
	// ClusterNamespace is the cluster namespace on the hub, and the
	// namespace of the copy on the managed cluster.
	ClusterNamespace string
}

// SetupWithManager registers the controller with mgr (the hub manager, so
// that it runs while the hub connection does). It watches the hub's key in
// hub and the copy in managed, the caches of HubClient and ManagedClient,
// so that a copy changed or deleted by hand is put back.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, hub, managed cache.Cache) error {
	isKey := predicate.NewTypedPredicateFuncs(func(s *corev1.Secret) bool { return r.isKey(client.ObjectKeyFromObject(s)) })
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		WatchesRawSource(source.Kind(hub, &corev1.Secret{}, &handler.TypedEnqueueRequestForObject[*corev1.Secret]{}, isKey)).
		WatchesRawSource(source.Kind(managed, &corev1.Secret{}, &handler.TypedEnqueueRequestForObject[*corev1.Secret]{}, isKey)).
		Complete(r)
}

func (r *Reconciler) isKey(key types.NamespacedName) bool {
	return key.Namespace == r.ClusterNamespace && key.Name == templating.EncryptionKeySecret
}

// Reconcile makes the managed copy of the encryption key match the hub's.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if !r.isKey(req.NamespacedName) {
		return ctrl.Result{}, nil // the caches hold no other Secret
	}
	hub, err := get(ctx, r.HubClient, req.NamespacedName)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("getting the hub's encryption key %s: %w", req, err)
	}
	local, err := get(ctx, r.ManagedClient, req.NamespacedName)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("getting the managed copy of the encryption key %s: %w", req, err)
	}
	if hub == nil || !hub.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.reconcileDelete(ctx, local)
	}
	return ctrl.Result{}, r.reconcileNormal(ctx, hub, local)
}

// get returns the Secret key read through c, nil when it does not exist.
func get(ctx context.Context, c client.Reader, key types.NamespacedName) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	if err := c.Get(ctx, key, s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return s, nil
}

// reconcileDelete deletes the copy of a key that is gone from the hub, if
// this controller wrote it.
func (r *Reconciler) reconcileDelete(ctx context.Context, local *corev1.Secret) error {
	if local == nil || !local.DeletionTimestamp.IsZero() || !Owned(local) {
		return nil
	}
	if err := r.ManagedClient.Delete(ctx, local, client.Preconditions{UID: &local.UID}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting the copy of the encryption key %s: %w", klog.KObj(local), err)
	}
	ctrl.LoggerFrom(ctx).Info("Deleted the copy of the encryption key", "secret", klog.KObj(local))
	return nil
}

func (r *Reconciler) reconcileNormal(ctx context.Context, hub, local *corev1.Secret) error {
	log := ctrl.LoggerFrom(ctx)
	switch {
	case local == nil:
		return r.create(ctx, Desired(hub))
	case InSync(local, hub):
	case !Updatable(local, hub):
		// Note: the type and an immutable Secret's data cannot change; the
		// deletion's event brings the next reconcile, which creates it anew.
		if err := r.ManagedClient.Delete(ctx, local, client.Preconditions{UID: &local.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("replacing the copy of the encryption key %s: %w", klog.KObj(local), err)
		}
		log.Info("Deleted the copy of the encryption key to replace it", "secret", klog.KObj(local))
	default:
		want := Desired(hub)
		local.Data, local.Labels = want.Data, mergeLabels(local.Labels, want.Labels)
		if err := r.ManagedClient.Update(ctx, local); err != nil {
			return fmt.Errorf("updating the copy of the encryption key %s: %w", klog.KObj(local), err)
		}
		log.Info("Updated the copy of the encryption key", "secret", klog.KObj(local))
	}
	return nil
}

// create creates the copy, and its namespace when the namespace is missing
// (specsync creates it with the first policy, which may come later).
func (r *Reconciler) create(ctx context.Context, copied *corev1.Secret) error {
	err := r.ManagedClient.Create(ctx, copied.DeepCopy())
	if apierrors.IsNotFound(err) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: copied.Namespace}}
		if err := r.ManagedClient.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s: %w", copied.Namespace, err)
		}
		err = r.ManagedClient.Create(ctx, copied.DeepCopy())
	}
	if err != nil {
		return fmt.Errorf("creating the copy of the encryption key %s: %w", klog.KObj(copied), err)
	}
	ctrl.LoggerFrom(ctx).Info("Created the copy of the encryption key", "secret", klog.KObj(copied))
	return nil
}
