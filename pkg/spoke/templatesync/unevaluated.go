package templatesync

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/templatekinds"
	"github.com/canopy-policy/canopy/pkg/templating"
)

// Messages of a template that nothing on the cluster evaluates open with
// OCM's words for the same situations (its framework addon's template-sync),
// so that users and dashboards read them the same way.
const (
	// noMappingPrefix: the API server serves no such kind or version.
	noMappingPrefix = "Mapping not found, check if you have the CRD deployed: "
	// notSupportedPrefix: the kind is not a policy template kind.
	notSupportedPrefix = "policy-template kind is not supported: "
)

// UnevaluatedMessage is the message a template of kind gvk is reported
// NonCompliant with when no CRD labelled as a policy template kind serves
// its group and kind (kindServed false), or when one does but not at gvk's
// version (kindServed true). It names the kind and says that no controller
// on this cluster evaluates it, and what to do: Canopy's own kinds need the
// agent's CRDs, other kinds a controller with a labelled CRD.
func UnevaluatedMessage(gvk schema.GroupVersionKind, kindServed bool) string {
	kind := kindString(gvk)
	switch {
	case kindServed:
		return templating.TemplateErrorPrefix + noMappingPrefix + fmt.Sprintf(
			"no controller on this cluster evaluates %s at version %s: its CustomResourceDefinition serves other versions; use one of those",
			kind, gvk.Version)
	case templatekinds.IsEvaluated(gvk.GroupKind()):
		return templating.TemplateErrorPrefix + noMappingPrefix + fmt.Sprintf(
			"no controller on this cluster evaluates %s: the Canopy agent evaluates it, but its CustomResourceDefinition "+
				"(with the label %s=%s) is not installed; install the agent's CRDs",
			kind, policyv1.PolicyTypeLabel, policyv1.PolicyTypeTemplate)
	default:
		return templating.TemplateErrorPrefix + notSupportedPrefix + fmt.Sprintf(
			"no controller on this cluster evaluates %s: the Canopy agent evaluates %s; "+
				"a kind another controller evaluates needs that controller installed, with its CustomResourceDefinition labelled %s=%s",
			kind, templatekinds.List(), policyv1.PolicyTypeLabel, policyv1.PolicyTypeTemplate)
	}
}

// unmapped reports a template whose version the API server does not serve
// (a read or write of it failed with "no matches for kind") as
// NonCompliant, and returns other errors for a retry.
//
// Note: Plan only sees group and kind; a template naming a version its
// CRD does not serve gets this far, and without this would be retried
// forever with nothing shown on the Policy.
func (r *Reconciler) unmapped(ctx context.Context, policy *policyv1.Policy, desired *unstructured.Unstructured, err error) error {
	if !meta.IsNoMatchError(err) {
		return err
	}
	return r.record(ctx, policy, desired.GetName(), desired, policyv1.NonCompliant, UnevaluatedMessage(desired.GroupVersionKind(), true))
}
