package templatesync_test

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/spoke/templatesync"
)

// TestStaleCacheWrites: a template write that starts from a cache that has
// not seen the object's creation (AlreadyExists) or its last change (a
// conflict) is done again from the API server's copy, with no error: the
// agent's cache lags behind its own writes during bursts.
func TestStaleCacheWrites(t *testing.T) {
	g := NewWithT(t)
	ctx, c := t.Context(), suite.Get(t).Cluster("managed").Client
	policy := &policyv1.Policy{}
	policy.Namespace, policy.Name = "default", "stale-cache"
	template := func(remediation string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("policy.open-cluster-management.io/v1")
		u.SetKind("ConfigurationPolicy")
		u.SetNamespace("default")
		u.SetName("stale-cache")
		u.SetLabels(map[string]string{policyv1.PolicyLabel: policy.Name})
		u.Object["spec"] = map[string]any{"remediationAction": remediation, "object-templates": []any{map[string]any{
			"complianceType": "musthave", "objectDefinition": map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "default"}},
		}}}
		return u
	}
	live := func() *unstructured.Unstructured {
		u := template("")
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(u), u)).To(Succeed())
		return u
	}

	g.Expect(c.Create(ctx, template("inform"))).To(Succeed())
	g.Expect(templatesync.WriteFromCache(ctx, c, policy, template("enforce"), nil)).To(Succeed(),
		"the cache had not seen the creation: AlreadyExists, written over the API server's copy")
	g.Expect(live().Object).To(HaveKeyWithValue("spec", HaveKeyWithValue("remediationAction", "enforce")))

	stale := live()
	g.Expect(templatesync.WriteFromCache(ctx, c, policy, template("inform"), live())).To(Succeed())
	g.Expect(templatesync.WriteFromCache(ctx, c, policy, template("Enforce"), stale)).To(Succeed(),
		"the cache had not seen the last change: a conflict, written over the API server's copy")
	g.Expect(live().Object).To(HaveKeyWithValue("spec", HaveKeyWithValue("remediationAction", "Enforce")))
}
