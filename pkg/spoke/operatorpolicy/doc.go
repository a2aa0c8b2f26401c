// Package operatorpolicy evaluates OperatorPolicy objects
// (policy.open-cluster-management.io/v1beta1) on the managed cluster, with
// the semantics, condition types, reasons and messages of OCM's
// config-policy-controller, so that existing policies and the consoles
// that read them work unchanged.
//
// Reconciler reconciles OperatorPolicy and is the only writer of its
// status: compliant, conditions (ValidPolicySpec, OperatorGroupCompliant,
// SubscriptionCompliant, InstallPlanCompliant,
// ClusterServiceVersionCompliant, CustomResourceDefinitionCompliant,
// DeploymentCompliant, CatalogSourcesUnhealthy, and Compliant, whose
// message sums up the others: "Compliant; the policy spec is valid, the
// OperatorGroup matches what is required by the policy, ..."),
// relatedObjects, resolvedSubscriptionLabel, overlappingPolicies and
// observedGeneration. It records compliance events on the parent Policy
// through pkg/compliance, one per change (the Compliant message without
// its state), with the OperatorPolicy as the related object.
//
// The evaluator reads and writes OLM's objects as unstructured objects
// (Canopy does not link OLM's API): OperatorGroup, Subscription,
// InstallPlan, ClusterServiceVersion, CatalogSource and, for the defaults
// of a Subscription that names no channel or catalog, PackageManifest. It
// never does OLM's work. A musthave policy under enforce creates the
// OperatorGroup (an AllNamespaces one when the policy names none and the
// namespace has none) and the Subscription (installPlanApproval Manual,
// unless upgradeApproval is Automatic and versions is empty), then approves
// the InstallPlan of the first installation, and of upgrades when
// upgradeApproval is Automatic, only for the versions listed in versions
// (or the Subscription's startingCSV). Under inform it only reports. A
// mustnothave policy under enforce deletes the Subscription, the CSVs, the
// OperatorGroup and the CRDs as removalBehavior says.
//
// Reads go through github.com/stolostron/kubernetes-dependency-watches
// (pkg/depwatch), which re-evaluates a policy when one of the objects it
// read changes; PackageManifests, which cannot be watched, are read from
// the API server and a policy waiting on one is evaluated again every
// minute.
//
// Not implemented (OCM has them): templates in the spec, deprecation and
// minor-channel conditions (complianceConfig.deprecationsPresent and
// minorChannelUpgradeAvailable are accepted and not evaluated), the
// detection of an operator already installed in AllNamespaces mode
// elsewhere, approving the CSVs of a bundle's dependencies, the
// intervention on a Subscription stuck on an unreferenced CSV, and
// status.history.
package operatorpolicy
