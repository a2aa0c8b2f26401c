package operatorpolicy

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
)

// Condition types of the OperatorPolicy status, OCM's.
const (
	// CondCompliant summarises the others; its message is the compliance
	// event's.
	CondCompliant = "Compliant"
	// CondValidPolicySpec says whether the spec can be evaluated.
	CondValidPolicySpec = "ValidPolicySpec"
	// CondOperatorGroup is about the OperatorGroup.
	CondOperatorGroup = "OperatorGroupCompliant"
	// CondSubscription is about the Subscription.
	CondSubscription = "SubscriptionCompliant"
	// CondInstallPlan is about the InstallPlans.
	CondInstallPlan = "InstallPlanCompliant"
	// CondCSV is about the ClusterServiceVersion.
	CondCSV = "ClusterServiceVersionCompliant"
	// CondCRD is about the operator's CustomResourceDefinitions.
	CondCRD = "CustomResourceDefinitionCompliant"
	// CondDeployment is about the operator's Deployments.
	CondDeployment = "DeploymentCompliant"
	// CondCatalogSource is about the CatalogSource; note its polarity:
	// False is healthy.
	CondCatalogSource = "CatalogSourcesUnhealthy"
	// CondCatalogSourceUnknown is set when the catalog's state is unknown.
	CondCatalogSourceUnknown = "CatalogSourcesUnknownState"
	// CondNoDeprecations says whether the package, the channel or the
	// installed bundle is deprecated (False when one is). It counts in
	// the Compliant condition only when complianceConfig.deprecationsPresent
	// is NonCompliant.
	CondNoDeprecations = "NoDeprecations"
	// CondMinorChannel says whether a newer minor-version channel than
	// the subscribed one exists. It counts in the Compliant condition only
	// when complianceConfig.minorChannelUpgradeAvailable is NonCompliant.
	CondMinorChannel = "MinorChannelUpgradeAvailable"
)

// Reasons of related objects, OCM's (and ConfigurationPolicy's).
const (
	reasonWantFoundExists    = "Resource found as expected"
	reasonWantFoundDNE       = "Resource not found but should exist"
	reasonWantFoundNoMatch   = "Resource found but does not match"
	reasonWantFoundCreated   = "K8s creation success"
	reasonUpdateSuccess      = "K8s update success"
	reasonDeleteSuccess      = "K8s deletion success"
	reasonWantNotFoundExists = "Resource found but should not exist"
	reasonWantNotFoundDNE    = "Resource not found as expected"
	reasonFoundNotApplicable = "Resource found but will not be handled in mustnothave mode"
	reasonDeleting           = "The object is being deleted but has not been removed yet"
)

// maxMessageLength bounds the Compliant condition's message, as in OCM.
const maxMessageLength = 4096

// condType is the condition type about kind.
func condType(kind string) string {
	return map[string]string{
		"OperatorGroup": CondOperatorGroup, "Subscription": CondSubscription, "InstallPlan": CondInstallPlan,
		"ClusterServiceVersion": CondCSV, "CustomResourceDefinition": CondCRD, "Deployment": CondDeployment,
		"CatalogSource": CondCatalogSource,
	}[kind]
}

func cond(kind string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
	return metav1.Condition{Type: condType(kind), Status: status, Reason: reason, Message: message}
}

// invalidCausingUnknownCond: the policy is invalid, so kind's state is unknown.
func invalidCausingUnknownCond(kind string) metav1.Condition {
	return cond(kind, metav1.ConditionUnknown, "InvalidPolicySpec",
		"the status of the "+kind+" could not be determined because the policy is invalid")
}

func missingWantedCond(kind string) metav1.Condition {
	return cond(kind, metav1.ConditionFalse, kind+"Missing", "the "+kind+" required by the policy was not found")
}

func missingNotWantedCond(kind string) metav1.Condition {
	return cond(kind, metav1.ConditionTrue, kind+"NotPresent", "the "+kind+" is not present")
}

// identified is " (a) is" for one identifier, "s (a, b) are" for several,
// " is" for none (with verbs one and many).
func identified(one, many string, ids []string) string {
	switch len(ids) {
	case 0:
		return " " + one
	case 1:
		return fmt.Sprintf(" (%s) %s", ids[0], one)
	default:
		return fmt.Sprintf("s (%s) %s", strings.Join(ids, ", "), many)
	}
}

func foundNotWantedCond(kind string, ids ...string) metav1.Condition {
	return cond(kind, metav1.ConditionFalse, kind+"Present", "the "+kind+identified("is", "are", ids)+" present")
}

func createdCond(kind string) metav1.Condition {
	return cond(kind, metav1.ConditionTrue, kind+"Created", "the "+kind+" required by the policy was created")
}

func deletedCond(kind string, ids ...string) metav1.Condition {
	return cond(kind, metav1.ConditionTrue, kind+"Deleted", "the "+kind+identified("was", "were", ids)+" deleted")
}

func deletingCond(kind string, ids ...string) metav1.Condition {
	return cond(kind, metav1.ConditionFalse, kind+"Deleting",
		"the "+kind+identified("has", "have", ids)+" a deletion timestamp")
}

func keptCond(kind string) metav1.Condition {
	return cond(kind, metav1.ConditionTrue, kind+"Kept", "the policy specifies to keep the "+kind)
}

func matchesCond(kind string) metav1.Condition {
	return cond(kind, metav1.ConditionTrue, kind+"Matches", "the "+kind+" matches what is required by the policy")
}

func mismatchCond(kind string) metav1.Condition {
	return cond(kind, metav1.ConditionFalse, kind+"Mismatch", "the "+kind+" found on the cluster does not match the policy")
}

func updatedCond(kind string) metav1.Condition {
	return cond(kind, metav1.ConditionTrue, kind+"Updated", "the "+kind+" was updated to match the policy")
}

func notApplicableCond(kind string) metav1.Condition {
	return cond(kind, metav1.ConditionTrue, kind+"NotApplicable", "MustNotHave policies ignore kind "+kind)
}

// validationCond is ValidPolicySpec: True without errors, else False with
// the errors joined.
func validationCond(errs []error) metav1.Condition {
	if len(errs) == 0 {
		return metav1.Condition{Type: CondValidPolicySpec, Status: metav1.ConditionTrue, Reason: "PolicyValidated",
			Message: "the policy spec is valid"}
	}
	msgs := make([]string, len(errs))
	for i, err := range errs {
		msgs[i] = err.Error()
	}
	return metav1.Condition{Type: CondValidPolicySpec, Status: metav1.ConditionFalse, Reason: "InvalidPolicySpec",
		Message: strings.Join(msgs, ", ")}
}

var (
	opGroupPreexistingCond = metav1.Condition{Type: CondOperatorGroup, Status: metav1.ConditionTrue,
		Reason: "PreexistingOperatorGroupFound",
		Message: "the policy does not specify an OperatorGroup but one already exists in the namespace - " +
			"assuming that OperatorGroup is correct"}
	opGroupTooManyCond = metav1.Condition{Type: CondOperatorGroup, Status: metav1.ConditionFalse,
		Reason: "TooManyOperatorGroups", Message: "there is more than one OperatorGroup in the namespace"}
	subConstraintsNotSatisfiableCond = metav1.Condition{Type: CondSubscription, Status: metav1.ConditionFalse,
		Reason: "ConstraintsNotSatisfiable", Message: "constraints not satisfiable: refer to the Subscription for more details"}
	noInstallPlansCond = metav1.Condition{Type: CondInstallPlan, Status: metav1.ConditionTrue,
		Reason: "NoInstallPlansFound", Message: "there are no relevant InstallPlans in the namespace"}
	installPlanFailedCond = metav1.Condition{Type: CondInstallPlan, Status: metav1.ConditionFalse,
		Reason: "InstallPlanFailed", Message: "the current InstallPlan has failed"}
	installPlanInstallingCond = metav1.Condition{Type: CondInstallPlan, Status: metav1.ConditionFalse,
		Reason: "InstallPlansInstalling", Message: "a relevant InstallPlan is actively installing"}
	installPlansNoApprovalsCond = metav1.Condition{Type: CondInstallPlan, Status: metav1.ConditionTrue,
		Reason: "NoInstallPlansRequiringApproval", Message: "no InstallPlans requiring approval were found"}
	noCSVCond = metav1.Condition{Type: CondCSV, Status: metav1.ConditionFalse,
		Reason: "RelevantCSVNotFound", Message: "a relevant installed ClusterServiceVersion could not be found"}
	noCRDCond = metav1.Condition{Type: CondCRD, Status: metav1.ConditionTrue,
		Reason: "RelevantCRDNotFound", Message: "no CRDs were found for the operator"}
	crdFoundCond = metav1.Condition{Type: CondCRD, Status: metav1.ConditionTrue,
		Reason: "RelevantCRDFound", Message: "there are CRDs present for the operator"}
	noDeploymentsCond = metav1.Condition{Type: CondDeployment, Status: metav1.ConditionTrue,
		Reason: "NoRelevantDeployments", Message: "there are no relevant deployments because the ClusterServiceVersion is missing"}
	catalogSourceUnknownCond = metav1.Condition{Type: CondCatalogSourceUnknown, Status: metav1.ConditionTrue,
		Reason: "LastObservedUnknown", Message: "could not determine last observed state of CatalogSource"}
)

// installPlanUpgradeCond: an InstallPlan awaits approval. It is
// NonCompliant only when complianceConfig.upgradesAvailable says so.
func installPlanUpgradeCond(config policyv1beta1.ComplianceConfigAction, csvs, remaining []string) metav1.Condition {
	c := metav1.Condition{Type: CondInstallPlan, Reason: "InstallPlanRequiresApproval", Status: metav1.ConditionFalse}
	csvs = slices.Sorted(slices.Values(csvs))
	c.Message = fmt.Sprintf("an InstallPlan to update to [%s] is available for approval", strings.Join(csvs, ", "))
	if len(remaining) > 0 {
		remaining = slices.Sorted(slices.Values(remaining))
		c.Message += fmt.Sprintf(" but approval for [%v] is required", strings.Join(remaining, ", "))
	}
	if config == policyv1beta1.ConfigCompliant {
		c.Status = metav1.ConditionTrue
	}
	return c
}

func installPlanApprovedCond(version string) metav1.Condition {
	return metav1.Condition{Type: CondInstallPlan, Status: metav1.ConditionTrue, Reason: "InstallPlanApproved",
		Message: fmt.Sprintf("the InstallPlan for %v was approved", version)}
}

// allowedCSVCond reports an allowed CSV by its phase, reason and message.
func allowedCSVCond(name, phase, reason, message string) metav1.Condition {
	status := metav1.ConditionFalse
	if phase == "Succeeded" {
		status = metav1.ConditionTrue
	}
	if reason == "" { // Note: a condition needs a reason; OLM always sets one
		reason = cmpOr(phase, "Unknown")
	}
	return metav1.Condition{Type: CondCSV, Status: status, Reason: reason,
		Message: "ClusterServiceVersion (" + name + ") - " + message}
}

func disallowedCSVCond(name string) metav1.Condition {
	return metav1.Condition{Type: CondCSV, Status: metav1.ConditionFalse, Reason: "UnapprovedVersion",
		Message: "ClusterServiceVersion (" + name + ") is not an approved version"}
}

// deploymentCond reports the operator's Deployments; unavailable ones are
// NonCompliant unless complianceConfig.deploymentsUnavailable says
// Compliant.
func deploymentCond(config policyv1beta1.ComplianceConfigAction, exist bool, unavailable []string) metav1.Condition {
	c := metav1.Condition{Type: CondDeployment, Status: metav1.ConditionTrue, Reason: "DeploymentsAvailable",
		Message: "all operator Deployments have their minimum availability"}
	if !exist {
		c.Reason, c.Message = "NoExistingDeployments", "no existing operator Deployments"
	}
	if len(unavailable) > 0 {
		c.Status, c.Reason = metav1.ConditionFalse, "DeploymentsUnavailable"
		c.Message = fmt.Sprintf("the deployments %s do not have their minimum availability", strings.Join(unavailable, ", "))
		if config == policyv1beta1.ConfigCompliant {
			c.Status = metav1.ConditionTrue
		}
	}
	return c
}

// existingInstallCond: the operator is installed in AllNamespaces mode in
// another namespace, sourceNS, and OLM copied its CSV into this one. For
// the CatalogSource, whose polarity is reversed, the condition is False.
func existingInstallCond(kind, sourceNS string) metav1.Condition {
	c := cond(kind, metav1.ConditionTrue, "ExistingInstallation",
		fmt.Sprintf("the operator is installed in namespace %s and is available via AllNamespaces mode", sourceNS))
	if kind == kindCatalog {
		c.Status = metav1.ConditionFalse
	}
	return c
}

// deprecationSchema is what OLM deprecates: a package, a channel or a
// bundle.
type deprecationSchema string

const (
	deprecatedPackage deprecationSchema = "Package"
	deprecatedChannel deprecationSchema = "Channel"
	deprecatedBundle  deprecationSchema = "Bundle"
)

// deprecationCond: the package, channel or bundle name is deprecated, with
// OLM's message.
func deprecationCond(name string, schema deprecationSchema, message string) metav1.Condition {
	return metav1.Condition{Type: CondNoDeprecations, Status: metav1.ConditionFalse, Reason: string(schema) + "Deprecated",
		Message: "the requested " + name + " " + string(schema) + " was deprecated. " + message}
}

var noDeprecationsCond = metav1.Condition{Type: CondNoDeprecations, Status: metav1.ConditionTrue, Reason: "Recommended",
	Message: "The requested package, channel, and bundle are all at the recommended versions"}

// minorChannelOKCond: no newer minor channel, or the check was skipped.
func minorChannelOKCond(reason, message string) metav1.Condition {
	return metav1.Condition{Type: CondMinorChannel, Status: metav1.ConditionTrue, Reason: reason, Message: message}
}

// minorChannelUpgradeCond: newer minor-version channels exist. It is
// False only when complianceConfig.minorChannelUpgradeAvailable says
// NonCompliant.
func minorChannelUpgradeCond(config policyv1beta1.ComplianceConfigAction, channels []string) metav1.Condition {
	c := metav1.Condition{Type: CondMinorChannel, Status: metav1.ConditionTrue, Reason: "UpgradeAvailable",
		Message: "a newer version of the operator is available in channel(s): " + strings.Join(channels, ", ")}
	if config == policyv1beta1.ConfigNonCompliant {
		c.Status = metav1.ConditionFalse
	}
	return c
}

// catalogSourceFindCond reports the CatalogSource (True is unhealthy).
func catalogSourceFindCond(config policyv1beta1.ComplianceConfigAction, unhealthy, missing bool, name string) metav1.Condition {
	c := metav1.Condition{Type: CondCatalogSource, Status: metav1.ConditionFalse, Reason: "CatalogSourcesFound",
		Message: "CatalogSource was found"}
	if unhealthy {
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, "CatalogSourcesFoundUnhealthy", "CatalogSource was found but is unhealthy"
	}
	if missing {
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, "CatalogSourcesNotFound", "CatalogSource '"+name+"' was not found"
	}
	if c.Status == metav1.ConditionTrue && config == policyv1beta1.ConfigCompliant {
		c.Status = metav1.ConditionFalse
	}
	return c
}
