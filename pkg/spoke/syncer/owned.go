package syncer

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
)

// skippedResources are never swept: Canopy does not write them, and they
// are many.
var skippedResources = map[schema.GroupResource]bool{
	{Resource: "events"}:                         true,
	{Group: "events.k8s.io", Resource: "events"}: true,
}

// owned finds every object this policy applied earlier, of any kind,
// anywhere, by its PolicyLabel (and provenance annotation, since two
// policies of one name may live in two namespaces), grouped by namespace
// ("" for cluster-scoped). This is what makes "previously applied, now
// removed → deleted" work across restarts: the labels are the memory.
//
// The objects hold their kind and metadata only (a metadata list reads a
// tenth of what a full one does): what the planner needs of an object it
// may delete. A declared object is read whole elsewhere, and the whole
// copy is the one planned (plan keeps an object's first observation).
//
// Kinds the syncer watches are listed from the watch's cache, the others
// from the API server. Note: every evaluation of a policy sweeps; listing
// the 30,000 ConfigMaps of a 3,000-namespace tree from the API server each
// time set the agent's peak memory (make bench: syncer restart). An object
// the cache does not show yet was written a moment ago; its watch event
// evaluates the policy again.
//
// The objects are converted for the planner only when a namespace is
// planned (metadataObjects): a reconcile holds the sweep's every object at
// once (30,000 at full scale), and most namespaces are not planned again.
func (r *Reconciler) owned(ctx context.Context, t *tree) (map[string][]*metav1.PartialObjectMetadata, error) {
	gvks, err := r.listableKinds()
	out := map[string][]*metav1.PartialObjectMetadata{}
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for _, gvk := range gvks {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		from := r.ManagedReader
		opts := []client.ListOption{client.MatchingLabels{hierarchyv1alpha1.PolicyLabel: t.Policy}}
		if r.watching(gvk) {
			from, opts = r.cache, append(opts, client.UnsafeDisableDeepCopy) // only read: metadataObject copies
		}
		err := from.List(ctx, list, opts...)
		if err != nil {
			errs = append(errs, fmt.Errorf("listing %s: %w", gvk.GroupKind(), err))
			continue
		}
		for i := range list.Items {
			m := &list.Items[i]
			if strings.HasPrefix(m.Annotations[hierarchyv1alpha1.SourceAnnotation], t.Source+",") {
				m.SetGroupVersionKind(gvk) // Note: m is the list's shallow copy; its maps may be the cache's
				out[m.Namespace] = append(out[m.Namespace], m)
			}
		}
	}
	return out, kerrors.NewAggregate(errs)
}

// metadataObjects are owned as objects holding their kind and metadata
// only, for the planner.
func metadataObjects(owned []*metav1.PartialObjectMetadata) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, 0, len(owned))
	for _, m := range owned {
		out = append(out, metadataObject(m))
	}
	return out
}

// metadataObject is m as an object holding its kind and metadata only.
//
// Note: it copies what the planner reads of an object it did not declare,
// m is left as it is (it may be the cache's).
func metadataObject(m *metav1.PartialObjectMetadata) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(m.GroupVersionKind())
	u.SetNamespace(m.Namespace)
	u.SetName(m.Name)
	u.SetUID(m.UID)
	u.SetResourceVersion(m.ResourceVersion)
	u.SetLabels(m.Labels)
	u.SetAnnotations(m.Annotations)
	u.SetOwnerReferences(m.OwnerReferences)
	u.SetDeletionTimestamp(m.DeletionTimestamp)
	return u
}

// listableKinds returns, through discovery, the preferred version of every
// kind that can be listed and deleted.
func (r *Reconciler) listableKinds() ([]schema.GroupVersionKind, error) {
	lists, err := r.discovery.ServerPreferredResources()
	var out []schema.GroupVersionKind
	for _, l := range lists {
		gv, perr := schema.ParseGroupVersion(l.GroupVersion)
		if perr != nil {
			continue
		}
		for _, res := range l.APIResources {
			if strings.Contains(res.Name, "/") || skippedResources[gv.WithResource(res.Name).GroupResource()] ||
				!slices.Contains(res.Verbs, "list") || !slices.Contains(res.Verbs, "delete") {
				continue
			}
			out = append(out, gv.WithKind(res.Kind))
		}
	}
	if err != nil {
		// Note: a partial answer (one aggregated API down) still sweeps the
		// rest; the error makes the reconcile retry.
		return out, fmt.Errorf("discovering the kinds to sweep: %w", err)
	}
	return out, nil
}
