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
// DeploymentCompliant, CatalogSourcesUnhealthy, NoDeprecations,
// MinorChannelUpgradeAvailable, and Compliant, whose message sums up the
// others: "Compliant; the policy spec is valid, the OperatorGroup matches
// what is required by the policy, ..."; NoDeprecations and
// MinorChannelUpgradeAvailable count only as complianceConfig says),
// relatedObjects, resolvedSubscriptionLabel, overlappingPolicies, history
// (the Compliant messages, newest first, MaxHistoryLength of them) and
// observedGeneration. It records compliance events on the parent Policy
// through pkg/compliance, one per change (the Compliant message without
// its state), with the OperatorPolicy as the related object.
//
// The evaluator reads and writes OLM's objects as unstructured objects
// (Canopy does not link OLM's API): OperatorGroup, Subscription,
// InstallPlan, ClusterServiceVersion, CatalogSource and PackageManifest
// (the defaults of a Subscription that names no channel or catalog, the
// deprecations, the newer channels). It never does OLM's work. A musthave policy under enforce creates the
// OperatorGroup (an AllNamespaces one when the policy names none and the
// namespace has none) and the Subscription (installPlanApproval Manual,
// unless upgradeApproval is Automatic and versions is empty), then approves
// the InstallPlan of the first installation, and of upgrades when
// upgradeApproval is Automatic, only for the versions listed in versions
// (or the Subscription's startingCSV), together with the CSVs of the
// packages the operator requires (read from the InstallPlan's bundle
// lookups). Under inform it only reports. A mustnothave policy under
// enforce deletes the Subscription, the CSVs, the OperatorGroup and the
// CRDs as removalBehavior says. An operator wanted in AllNamespaces mode
// that is installed in another namespace already (OLM copied its CSV into
// this one) is reported as such, and no Subscription is made for it.
//
// versions, subscription and operatorGroup may hold managed-cluster
// templates (go-template-utils, as OCM resolves them; the
// disable-templates annotation turns them off); what they read is
// watched.
//
// Reads go through github.com/stolostron/kubernetes-dependency-watches
// (pkg/depwatch), which re-evaluates a policy when one of the objects it
// read changes; PackageManifests, which cannot be watched, are read from
// the API server and a policy waiting on one is evaluated again every
// minute.
//
// Not implemented (OCM has them): hub templates in the OperatorPolicy
// itself, encrypted values in its templates, the intervention on a
// Subscription stuck on an unreferenced CSV
// (status.subscriptionInterventionTime), and the compliance events OCM
// records for the state before an enforcement action within one
// evaluation (Canopy records the state after it, once).
package operatorpolicy
