package controlplane

import (
	"context"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

// warmCRDStorage lists every served version of crds once, all at once.
//
// Note: kube-apiserver makes a custom resource's storage and watch cache on
// the first request for it, and while that cache initializes it answers a
// list with 429 and Retry-After: 1; client-go waits the second and retries.
// A test that lists kinds one after another on a new API server waited a
// second per kind (kubectl-canopy's TestPlan, 20 of its 26 seconds).
// Listed together, they wait that second once. Errors are left to the
// tests' own requests, which see them again.
func warmCRDStorage(ctx context.Context, cfg *rest.Config, crds []*apiextensionsv1.CustomResourceDefinition) {
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return
	}
	var wg sync.WaitGroup
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: v.Name, Resource: crd.Spec.Names.Plural}
			wg.Go(func() { _, _ = mc.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1}) })
		}
	}
	wg.Wait()
}
