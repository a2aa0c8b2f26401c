package hubtemplates

import (
	"context"
	"fmt"

	"github.com/stolostron/go-template-utils/v7/pkg/templates"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/scheme"
	"github.com/canopy-policy/canopy/pkg/replica"
	"github.com/canopy-policy/canopy/pkg/templating"
)

// ResolveReplica returns the replica of root for cluster as the
// propagator would write it (with a Cache), its hub templates resolved the same way: the
// same context, functions and confinement to the root's namespace, or the
// permissions of spec.hubTemplateOptions.serviceAccountName (here by
// impersonating it, which cfg's user must be allowed). It reads the hub
// through cfg, caches and watches nothing, and writes nothing: when the
// cluster has no encryption key yet, or cfg cannot read it, "protect"
// encrypts with a throwaway key, and a replica that does not exist yet gets
// a new IV, so encrypted values may differ from the hub's but never show
// the value.
//
// The replica is built as for a cluster that no binding overrides, without
// PolicySet dependencies expanded. A template that fails is left as the
// root wrote it, with templating.HubTemplatesErrorAnnotation, as the hub
// writes it, and the error joins one "policy template <index>: <error>" per
// such template. The replica is nil only when the templates could not be
// resolved at all (the hub unreachable, say).
func ResolveReplica(ctx context.Context, cfg *rest.Config, root *policyv1.Policy, cluster string) (*policyv1.Policy, error) {
	out := replica.Build(root, replica.Cluster{Name: cluster}, nil)
	if !HasHubTemplates(root) {
		return out, nil
	}
	templating.QuietLibraryLog()
	hub, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, fmt.Errorf("connecting to the hub: %w", err)
	}
	lookupCfg, err := lookupConfig(ctx, hub, cfg, root)
	if err != nil {
		res := failAll(out.Spec.PolicyTemplates, err)
		res.ApplyTo(out)
		return out, res.Err()
	}
	run, err := offlineRun(ctx, hub, lookupCfg, root, out)
	if err != nil {
		return nil, err
	}
	res := run.run(out.Spec.PolicyTemplates)
	if res.Hold {
		return nil, res.Retry
	}
	res.ApplyTo(out)
	return out, res.Err()
}

// offlineRun is the templateRun of ResolveReplica: a resolver without
// cache, the labels and key read once, the IV of the existing replica.
func offlineRun(ctx context.Context, hub client.Client, lookupCfg *rest.Config, root, desired *policyv1.Policy) (*templateRun, error) {
	resolver, err := templates.NewResolver(lookupCfg, hubResolverConfig(false))
	if err != nil {
		return nil, fmt.Errorf("creating a template resolver: %w", err)
	}
	lookup, err := client.New(lookupCfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, fmt.Errorf("connecting to the hub: %w", err)
	}
	cluster := desired.Namespace
	run := &templateRun{
		resolver: resolver,
		options:  resolveOptions(root, cluster),
		context:  newTemplateContext(root, cluster),
		labels: func() (map[string]string, error) {
			mc := &clusterv1.ManagedCluster{}
			if err := lookup.Get(ctx, types.NamespacedName{Name: cluster}, mc); err != nil {
				return nil, fmt.Errorf("%w at reading the labels of the ManagedCluster: %w", templates.ErrContextTransformerFailed, err)
			}
			return mc.Labels, nil
		},
		key:  func() ([]byte, error) { return readEncryptionKey(ctx, hub, cluster) },
		read: func() ([]unstructured.Unstructured, error) { return resolver.GetUsedUnstructs(), nil },
	}
	existing := &policyv1.Policy{}
	if err := hub.Get(ctx, client.ObjectKeyFromObject(desired), existing); err == nil {
		run.iv = existing.Annotations[templating.IVAnnotation]
	}
	return run, nil
}

// lookupConfig is the configuration template lookups use: cfg, or cfg
// impersonating the ServiceAccount of root's hubTemplateOptions.
func lookupConfig(ctx context.Context, hub client.Client, cfg *rest.Config, root *policyv1.Policy) (*rest.Config, error) {
	name := serviceAccountOf(root)
	if name == "" {
		return cfg, nil
	}
	sa := types.NamespacedName{Namespace: root.Namespace, Name: name}
	if err := hub.Get(ctx, sa, &corev1.ServiceAccount{}); apierrors.IsNotFound(err) {
		return nil, &serviceAccountMissingError{sa}
	}
	impersonating := rest.CopyConfig(cfg)
	impersonating.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + sa.Namespace + ":" + sa.Name,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + sa.Namespace},
	}
	return impersonating, nil
}

// readEncryptionKey reads the key of cluster, or returns a throwaway one
// when there is none or it cannot be read.
func readEncryptionKey(ctx context.Context, hub client.Client, cluster string) ([]byte, error) {
	secret := &corev1.Secret{}
	err := hub.Get(ctx, types.NamespacedName{Namespace: cluster, Name: templating.EncryptionKeySecret}, secret)
	switch {
	case err == nil:
		return validKey(secret.Data[templating.EncryptionKeyField], cluster)
	case apierrors.IsNotFound(err) || apierrors.IsForbidden(err):
		return GenerateEncryptionKey()
	default:
		return nil, fmt.Errorf("reading Secret %s/%s: %w", cluster, templating.EncryptionKeySecret, err)
	}
}
