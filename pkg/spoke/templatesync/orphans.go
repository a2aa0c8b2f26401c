package templatesync

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/source"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/templatekinds"
)

// Cluster-scoped templates (Gatekeeper's) have no owner reference, so no
// garbage collector deletes them with their Policy: templatesync does,
// when it sees the Policy go (reconcileDelete). A Policy deleted while the
// agent was down is never seen going; so at start, every cluster-scoped
// template labelled for a Policy is looked at once: its Policy's reconcile
// finds the Policy gone and prunes it. (OCM puts a finalizer on the Policy
// instead.)

// orphans returns the source that, when the controller starts, enqueues
// the Policy of every cluster-scoped template, read through reader (the
// API server).
func (r *Reconciler) orphans(reader client.Reader) source.Source {
	return source.Func(func(ctx context.Context, queue workqueue.TypedRateLimitingInterface[ctrl.Request]) error {
		owners, err := r.clusterScopedOwners(ctx, reader)
		if err != nil {
			// Note: not fatal to the controller; the templates stay until
			// their Policy's name is reconciled again.
			ctrl.LoggerFrom(ctx).Error(err, "Listing cluster-scoped templates for policies deleted meanwhile")
			return nil
		}
		for _, key := range owners {
			queue.Add(ctrl.Request{NamespacedName: key})
		}
		return nil
	})
}

// clusterScopedOwners returns the Policies (by namespace and name, from
// the labels) of the cluster-scoped templates on the cluster, each once.
func (r *Reconciler) clusterScopedOwners(ctx context.Context, reader client.Reader) ([]types.NamespacedName, error) {
	kinds := templateKinds{}
	if err := r.gatekeeperKinds(ctx, kinds); err != nil {
		return nil, err
	}
	seen := map[types.NamespacedName]bool{}
	var out []types.NamespacedName
	for gk, version := range kinds {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gk.WithVersion(version).GroupVersion().WithKind(gk.Kind + "List"))
		if err := reader.List(ctx, list, client.HasLabels{policyv1.PolicyLabel, policyv1.ClusterNamespaceLabel}); err != nil {
			return nil, fmt.Errorf("listing %s: %w", gk, err)
		}
		for _, obj := range list.Items {
			labels := obj.GetLabels()
			key := types.NamespacedName{Namespace: labels[policyv1.ClusterNamespaceLabel], Name: labels[policyv1.PolicyLabel]}
			if seen[key] || (r.Namespace != "" && key.Namespace != r.Namespace) || !templatekinds.ClusterScoped(gk) {
				continue
			}
			seen[key] = true
			out = append(out, key)
		}
	}
	return out, nil
}
