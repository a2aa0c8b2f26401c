package configpolicy

import (
	"context"
	"fmt"

	depclient "github.com/stolostron/kubernetes-dependency-watches/client"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/dryrun"
)

// Ops of a dry-run Action (dryrun.Action.Op).
const (
	// OpCreate: the object is missing and enforce would create it.
	OpCreate = "create"
	// OpUpdate: the object does not match and enforce would update it.
	OpUpdate = "update"
	// OpDelete: the object must not exist and enforce would delete it.
	OpDelete = "delete"
	// OpNoncompliant: the template is not satisfied and enforce cannot fix
	// it (an unnamed template that found nothing, an error).
	OpNoncompliant = "noncompliant"
)

// DryRun evaluates policy on the cluster of cfg as an enforce evaluation
// would, with the controller's own evaluation, and returns what it would
// create, update and delete, in template order. It writes nothing: the
// evaluation runs as inform (differences are checked with server-side
// dry-run updates). Pruning is not planned.
//
// Go templates and object-templates-raw are resolved against the live
// cluster, as the controller would resolve them now (a resolver that reads
// from the API server, caching nothing): the actions name the resolved
// objects, and a template that does not resolve is an action with its
// error. A create or update carries the object it would write
// (dryrun.Action.Object, dryrun_objects.go). Secret values never show:
// messages about objects resolved from Secrets or encrypted values are
// masked as the controller masks them, and so are the values resolved
// into their objects.
func DryRun(ctx context.Context, cfg *rest.Config, policy *policyv1.ConfigurationPolicy) ([]dryrun.Action, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the dynamic client: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the discovery client: %w", err)
	}
	r := &Reconciler{dynamic: dyn, discovery: dc,
		watcher: mappingOnly{cache: depclient.NewObjectCache(dc, depclient.ObjectCacheOptions{})}}
	e := &evaluation{r: r, policy: policy, reader: directReader{client: dyn}, previous: map[policyv1.ObjectResource]policyv1.RelatedObject{}}
	rs, ots, failed := e.resolveTemplates(ctx) // as evaluateTemplates, keeping rs for the objects
	if failed != nil {
		return templateActions(*failed, nil), nil
	}
	var out []dryrun.Action
	for i, ot := range ots {
		actions := templateActions(e.evaluateOne(ctx, rs, i, ot), parsed(policy.Name, i, ot))
		e.addObjects(ctx, rs, i, ot, actions)
		out = append(out, actions...)
	}
	return out, nil
}

// parsed is object template index, or nil when it does not parse.
func parsed(policy string, index int, ot policyv1.ObjectTemplate) *objectTemplate {
	t, terr := parseTemplate(policy, index, ot)
	if terr != nil {
		return nil
	}
	return t
}

// templateActions are what enforce would do for the outcome of object
// template t (nil when it does not parse).
func templateActions(o templateOutcome, t *objectTemplate) []dryrun.Action {
	var gvk schema.GroupVersionKind
	var complianceType policyv1.ComplianceType
	if t != nil {
		gvk, complianceType = t.gvk, t.complianceType
	}
	var out []dryrun.Action
	for _, res := range o.results {
		if a, ok := dryRunAction(o.resource, gvk, complianceType, res); ok {
			out = append(out, a)
		}
	}
	return out
}

// dryRunAction turns one inform result into what enforce would do.
func dryRunAction(resource string, gvk schema.GroupVersionKind, ct policyv1.ComplianceType, res objectResult) (dryrun.Action, bool) {
	if res.compliant {
		return dryrun.Action{}, false
	}
	_, _, msg := templateMessage(resource, []objectResult{res})
	apiVersion, kind := gvk.ToAPIVersionAndKind()
	a := dryrun.Action{Op: OpNoncompliant, APIVersion: apiVersion, Kind: kind, Namespace: res.namespace, Reason: msg}
	if ct != "" {
		a.Reason = string(ct) + ": " + msg
	}
	if len(res.names) > 0 {
		a.Name = res.names[0]
	}
	switch {
	case res.reason == ReasonNotFound && a.Name != "":
		a.Op = OpCreate
	case res.reason == ReasonFoundNoMatch:
		a.Op = OpUpdate
	case res.reason == ReasonFoundUnwanted:
		a.Op = OpDelete
	}
	return a, true
}

// mappingOnly is the part of the dynamic watcher an evaluation that does
// not watch uses: resolving kinds through discovery. Its other methods are
// never called (they would panic on the nil interface).
type mappingOnly struct {
	depclient.DynamicWatcher
	cache depclient.ObjectCache
}

func (m mappingOnly) GVKToGVR(gvk schema.GroupVersionKind) (depclient.ScopedGVR, error) {
	return m.cache.GVKToGVR(gvk)
}
