package propagator

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// replicaPoster creates replicas without decoding the API server's answer:
// the propagator reads nothing from it (the cache shows the replica when
// it needs it), and decoding every created replica was a quarter of the
// hub's CPU while it propagates. An error answer is decoded as usual, so
// that AlreadyExists, Forbidden or an admission message reach the caller.
type replicaPoster struct {
	rest rest.Interface
}

// newReplicaPoster makes a replicaPoster with the connection of mgr.
func newReplicaPoster(mgr ctrl.Manager) (*replicaPoster, error) {
	cfg := rest.CopyConfig(mgr.GetConfig())
	gv := policyv1.GroupVersion
	cfg.GroupVersion, cfg.APIPath = &gv, "/apis"
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(mgr.GetScheme()).WithoutConversion()
	c, err := rest.RESTClientForConfigAndClient(cfg, mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("making the replicas' REST client: %w", err)
	}
	return &replicaPoster{rest: c}, nil
}

// create creates replica; replica itself is left as it is.
func (p *replicaPoster) create(ctx context.Context, replica *policyv1.Policy) error {
	obj := *replica // Note: a shallow copy, for the type alone
	obj.APIVersion, obj.Kind = policyv1.GroupVersion.String(), "Policy"
	body, err := json.Marshal(&obj)
	if err != nil {
		return fmt.Errorf("encoding replica: %w", err)
	}
	return p.rest.Post().Namespace(replica.Namespace).Resource("policies").Body(body).Do(ctx).Error()
}

// createReplica creates replica through the poster, or, for a Reconciler
// not set up with a manager (tests of one function), through its client.
func (r *Reconciler) createReplica(ctx context.Context, replica *policyv1.Policy) error {
	if r.poster == nil {
		return r.Client.Create(ctx, replica)
	}
	return r.poster.create(ctx, replica)
}
