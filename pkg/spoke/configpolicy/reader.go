package configpolicy

import (
	"context"
	"errors"
	"fmt"

	depclient "github.com/stolostron/kubernetes-dependency-watches/client"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// objectReader reads the objects a policy checks. Under evaluationInterval
// watch it reads through the dynamic watcher, which watches what it reads
// and re-evaluates the policy when that changes; otherwise straight from the
// API server.
type objectReader interface {
	// get returns the object, or nil when it does not exist.
	get(ctx context.Context, gvr depclient.ScopedGVR, gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, error)
	// list returns the objects of a namespace ("" for all or cluster scope)
	// that sel (nil for all) selects.
	list(ctx context.Context, gvr depclient.ScopedGVR, gvk schema.GroupVersionKind, ns string, sel labels.Selector) ([]unstructured.Unstructured, error)
}

// directReader reads from the API server.
type directReader struct{ client dynamic.Interface }

func resourceFor(c dynamic.Interface, gvr depclient.ScopedGVR, ns string) dynamic.ResourceInterface {
	if gvr.Namespaced && ns != "" {
		return c.Resource(gvr.GroupVersionResource).Namespace(ns)
	}
	return c.Resource(gvr.GroupVersionResource)
}

func (d directReader) get(ctx context.Context, gvr depclient.ScopedGVR, _ schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, error) {
	obj, err := resourceFor(d.client, gvr, ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return obj, err
}

func (d directReader) list(ctx context.Context, gvr depclient.ScopedGVR, _ schema.GroupVersionKind, ns string, sel labels.Selector) ([]unstructured.Unstructured, error) {
	opts := metav1.ListOptions{}
	if sel != nil {
		opts.LabelSelector = sel.String()
	}
	list, err := resourceFor(d.client, gvr, ns).List(ctx, opts)
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// watchReader reads through the dynamic watcher within the policy's query
// batch; kinds that cannot be watched are read directly.
type watchReader struct {
	watcher depclient.DynamicWatcher
	id      depclient.ObjectIdentifier
	direct  directReader
}

func (w watchReader) get(ctx context.Context, gvr depclient.ScopedGVR, gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, error) {
	obj, err := w.watcher.Get(w.id, gvk, ns, name)
	if errors.Is(err, depclient.ErrResourceUnwatchable) {
		return w.direct.get(ctx, gvr, gvk, ns, name)
	}
	if err != nil {
		return nil, fmt.Errorf("watching %s %s/%s: %w", gvk.Kind, ns, name, err)
	}
	return obj, nil
}

func (w watchReader) list(ctx context.Context, gvr depclient.ScopedGVR, gvk schema.GroupVersionKind, ns string, sel labels.Selector) ([]unstructured.Unstructured, error) {
	objs, err := w.watcher.List(w.id, gvk, ns, sel)
	if errors.Is(err, depclient.ErrResourceUnwatchable) {
		return w.direct.list(ctx, gvr, gvk, ns, sel)
	}
	if err != nil {
		return nil, fmt.Errorf("watching %s in %q: %w", gvk.Kind, ns, err)
	}
	return objs, nil
}
