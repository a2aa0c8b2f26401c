package templatesync

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// WriteFromCache writes the template object desired of policy with c as
// templatesync does when its cache holds cached for it (nil: the cache
// says the object does not exist).
func WriteFromCache(ctx context.Context, c client.Client, policy *policyv1.Policy, desired, cached *unstructured.Unstructured) error {
	r := &Reconciler{ManagedClient: c}
	return r.write(ctx, policy, desired, observation{templates: map[string]*unstructured.Unstructured{templateKey(desired): cached}})
}
