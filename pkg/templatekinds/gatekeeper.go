package templatekinds

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Gatekeeper's kinds are policy templates without a labelled CRD: OCM's
// framework addon syncs them by an allow list (its controllers/utils,
// policyAllowList), and so does Canopy's agent. They are cluster-scoped.
const (
	// GatekeeperTemplatesGroup is the API group of ConstraintTemplate.
	GatekeeperTemplatesGroup = "templates.gatekeeper.sh"
	// GatekeeperConstraintsGroup is the API group of every constraint kind,
	// one per ConstraintTemplate.
	GatekeeperConstraintsGroup = "constraints.gatekeeper.sh"
	// ConstraintTemplateKind is the kind of Gatekeeper's ConstraintTemplate.
	ConstraintTemplateKind = "ConstraintTemplate"
	// ConstraintTemplateCRD is the name of ConstraintTemplate's CRD, which
	// exists exactly when Gatekeeper is installed.
	ConstraintTemplateCRD = "constrainttemplates." + GatekeeperTemplatesGroup
	// ConstraintCRDLabel marks the CRDs Gatekeeper generates for the
	// constraint kinds of its ConstraintTemplates (value "yes").
	ConstraintCRDLabel = "gatekeeper.sh/constraint"
)

// ConstraintTemplateGK is the group and kind of Gatekeeper's
// ConstraintTemplate.
var ConstraintTemplateGK = schema.GroupKind{Group: GatekeeperTemplatesGroup, Kind: ConstraintTemplateKind}

// IsGatekeeper reports whether gk is a Gatekeeper policy template kind: the
// ConstraintTemplate or any constraint kind.
func IsGatekeeper(gk schema.GroupKind) bool {
	return gk == ConstraintTemplateGK || IsConstraint(gk)
}

// IsConstraint reports whether gk is a Gatekeeper constraint kind.
func IsConstraint(gk schema.GroupKind) bool {
	return gk.Group == GatekeeperConstraintsGroup && gk.Kind != ""
}

// ClusterScoped reports whether templates of gk are cluster-scoped: written
// without a namespace or an owner reference (a namespaced Policy cannot own
// them), and known as their Policy's by the labels alone.
func ClusterScoped(gk schema.GroupKind) bool {
	return IsGatekeeper(gk)
}

// ConstraintCRDName returns the name of the CRD of the constraint kind
// kind, as Gatekeeper's frameworks name it (OCM's gatekeepersync reads the
// same name): "<lower-case kind>.constraints.gatekeeper.sh".
func ConstraintCRDName(kind string) string {
	return strings.ToLower(kind) + "." + GatekeeperConstraintsGroup
}

// Messages of a Gatekeeper template that cannot be created: OCM's framework
// addon's words (controllers/templatesync/template_sync.go, "Mapping not
// found, ..." with the error of its utils.GVRFromGVK), so that users and
// dashboards read them the same way.
const (
	// gatekeeperNotInstalled: no ConstraintTemplate CRD on the cluster.
	gatekeeperNotInstalled = "Mapping not found, check if Gatekeeper is installed: "
	// constraintTemplateMissing: Gatekeeper is there, the constraint's
	// ConstraintTemplate (which makes its CRD) is not.
	constraintTemplateMissing = "Mapping not found, check if the required ConstraintTemplate has been deployed: "
	// noVersionedResource is OCM's utils.ErrNoVersionedResource.
	noVersionedResource = "the resource version was not found: "
)

// GatekeeperUnmappedMessage is the message, without OCM's "template-error; "
// prefix, of a Gatekeeper template of gvk whose kind the cluster does not
// serve. installed says whether Gatekeeper is installed (its
// ConstraintTemplate CRD exists): when it is not, every Gatekeeper kind
// reads "check if Gatekeeper is installed"; when it is, a constraint
// without its ConstraintTemplate reads as in OCM.
//
// Note: OCM words a constraint on a cluster without Gatekeeper as one
// without its ConstraintTemplate; Canopy says what is missing first.
func GatekeeperUnmappedMessage(gvk schema.GroupVersionKind, installed bool) string {
	prefix := gatekeeperNotInstalled
	if installed && IsConstraint(gvk.GroupKind()) {
		prefix = constraintTemplateMissing
	}
	return prefix + noVersionedResource + gvk.String()
}

// SetGatekeeperEnforcementAction applies a Policy's remediationAction to the
// constraint obj as OCM's framework addon does (its templatesync's
// overrideRemediationAction): inform makes spec.enforcementAction "warn",
// enforce makes it "deny", any other value (none) leaves it. A
// ConstraintTemplate, and a constraint without a spec, are left alone.
func SetGatekeeperEnforcementAction(obj *unstructured.Unstructured, remediationAction string) {
	if !IsConstraint(obj.GroupVersionKind().GroupKind()) {
		return
	}
	spec, ok := obj.Object["spec"].(map[string]any)
	if !ok {
		return
	}
	switch strings.ToLower(remediationAction) {
	case "inform":
		spec["enforcementAction"] = "warn"
	case "enforce":
		spec["enforcementAction"] = "deny"
	}
}
