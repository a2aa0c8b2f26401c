package syncer

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
	"github.com/canopy-policy/canopy/pkg/dryrun"
)

// DryRunResult is what an enforce evaluation of a HierarchyPolicy would do.
type DryRunResult struct {
	// Actions are the planned steps, in the order the syncer takes them.
	Actions []dryrun.Action
	// Problems make the tree invalid; deletions are then held.
	Problems []string
}

// ErrDryRun is returned by every write attempted during a dry run.
var ErrDryRun = errors.New("dry run: writes are not allowed")

// DryRun plans, with the syncer's own planner, what an enforce evaluation
// of p would create, update and delete on the cluster of cfg, writing
// nothing: the client it plans with refuses every write. It covers the
// declared tree, clusterResources and generators; live propagation
// (parent and template labels) is not planned.
func DryRun(ctx context.Context, cfg *rest.Config, c client.Client, p *hierarchyv1alpha1.HierarchyPolicy) (DryRunResult, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return DryRunResult{}, fmt.Errorf("creating the discovery client: %w", err)
	}
	ro := readOnly{Client: c}
	r := &Reconciler{ManagedClient: ro, ManagedReader: ro, mapper: c.RESTMapper(), discovery: dc}
	t, clusterDesired := policyTree(p)
	outcomes, err := r.syncAll(ctx, p, t, clusterDesired, false)
	if err != nil {
		return DryRunResult{}, err
	}
	res := DryRunResult{Problems: t.Problems}
	var errs []error
	for _, o := range outcomes {
		errs = append(errs, o.failed.all()...)
		for _, a := range o.actions {
			res.Actions = append(res.Actions, dryrun.Action{Op: string(a.op), APIVersion: a.object.GetAPIVersion(), Kind: a.object.GetKind(),
				Namespace: a.object.GetNamespace(), Name: a.object.GetName(), Reason: a.reason})
		}
	}
	return res, errors.Join(errs...)
}

// readOnly is a client that reads and refuses to write.
type readOnly struct{ client.Client }

func (readOnly) Create(context.Context, client.Object, ...client.CreateOption) error {
	return ErrDryRun
}
func (readOnly) Update(context.Context, client.Object, ...client.UpdateOption) error {
	return ErrDryRun
}
func (readOnly) Delete(context.Context, client.Object, ...client.DeleteOption) error {
	return ErrDryRun
}
func (readOnly) Patch(context.Context, client.Object, client.Patch, ...client.PatchOption) error {
	return ErrDryRun
}
func (readOnly) DeleteAllOf(context.Context, client.Object, ...client.DeleteAllOfOption) error {
	return ErrDryRun
}
func (readOnly) Apply(context.Context, runtime.ApplyConfiguration, ...client.ApplyOption) error {
	return ErrDryRun
}
