//go:build linux

package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// seen records, per object, when the benchmark's watch first saw it in a
// given state: the clock every latency is read from.
type seen struct {
	mu    sync.Mutex
	when  map[string]time.Time
	match func(obj any) bool
}

// count is how many objects have been seen in the state.
func (s *seen) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.when)
}

// at is when the object namespace/name was first seen in the state.
func (s *seen) at(key string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.when[key]
	return t, ok
}

// last is when the most recent object was first seen in the state.
func (s *seen) last() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	var latest time.Time
	for _, t := range s.when {
		if t.After(latest) {
			latest = t
		}
	}
	return latest
}

func (s *seen) observe(obj any) {
	now := time.Now()
	o, ok := obj.(metav1.Object)
	if !ok || !s.match(obj) {
		return
	}
	key := o.GetNamespace() + "/" + o.GetName()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, done := s.when[key]; !done {
		s.when[key] = now
	}
}

// track runs informer until ctx ends, recording objects matching match.
func track(ctx context.Context, informer cache.SharedIndexInformer, match func(obj any) bool) (*seen, error) {
	s := &seen{when: map[string]time.Time{}, match: match}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    s.observe,
		UpdateFunc: func(_, obj any) { s.observe(obj) },
	}); err != nil {
		return nil, fmt.Errorf("adding a watch handler: %w", err)
	}
	go informer.Run(ctx.Done())
	return s, nil
}

// metadataInformer watches the metadata of resource gvr matching selector.
func metadataInformer(cfg *rest.Config, gvr schema.GroupVersionResource, selector string) (cache.SharedIndexInformer, error) {
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating a metadata client: %w", err)
	}
	f := metadatainformer.NewFilteredSharedInformerFactory(mc, 0, metav1.NamespaceAll,
		func(o *metav1.ListOptions) { o.LabelSelector = selector })
	return f.ForResource(gvr).Informer(), nil
}

// dynamicInformer watches whole objects of resource gvr.
func dynamicInformer(cfg *rest.Config, gvr schema.GroupVersionResource) (cache.SharedIndexInformer, error) {
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating a dynamic client: %w", err)
	}
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dc, 0, metav1.NamespaceAll, nil)
	return f.ForResource(gvr).Informer(), nil
}

// always matches every object.
func always(any) bool { return true }

// waitFor polls cond every interval until it holds or the deadline passes.
func waitFor(ctx context.Context, what string, interval time.Duration, cond func(ctx context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, deadline())
	defer cancel()
	var lastErr error
	for {
		ok, err := cond(ctx)
		if ok {
			return nil
		}
		if err != nil {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			return errors.Join(fmt.Errorf("waiting for %s: %w", what, ctx.Err()), lastErr)
		case <-time.After(interval):
		}
	}
}

// unstructuredField reads a string field of an unstructured object.
func unstructuredField(obj any, fields ...string) string {
	u, ok := obj.(runtime.Unstructured)
	if !ok {
		return ""
	}
	v := u.UnstructuredContent()
	for i, f := range fields {
		if i == len(fields)-1 {
			s, _ := v[f].(string)
			return s
		}
		next, ok := v[f].(map[string]any)
		if !ok {
			return ""
		}
		v = next
	}
	return ""
}
