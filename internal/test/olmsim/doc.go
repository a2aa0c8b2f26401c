// Package olmsim is a simulator of the Operator Lifecycle Manager (OLM),
// for tests only. OLM cannot run where Canopy's tests run (no kubelet to
// run its pods, no catalog images), so the OperatorPolicy tests install
// OLM's CRDs (CRDs, Install) and run a Simulator that moves OLM's objects
// through their real phases, as OLM would:
//
//   - a Subscription to a package of its catalog gets an InstallPlan for
//     the head of its channel (or its startingCSV), approved at once when
//     the Subscription's installPlanApproval is Automatic, else in phase
//     RequiresApproval until someone sets spec.approved;
//   - an approved InstallPlan goes Installing, creates the CSV (labelled
//     for the Subscription, as OLM does) and goes Complete; the
//     Subscription then reports the CSV as installed, and the CSV it
//     replaces is deleted;
//   - a CSV goes Pending, InstallReady, Installing and Succeeded, with
//     OLM's reasons and messages, or Failed (InstallComponentFailed) when
//     the test made it fail (Fail);
//   - a Subscription to an unknown package, channel or catalog gets OLM's
//     ResolutionFailed condition (ConstraintsNotSatisfiable);
//   - publishing a newer CSV in a channel (Publish) upgrades the
//     Subscriptions of that channel through a new InstallPlan;
//   - a package that requires others (Package.Dependencies) is installed
//     with them: its InstallPlan lists their CSVs too, its
//     status.bundleLookups carry each bundle's olm.package and
//     olm.package.required properties, and each dependency gets a
//     Subscription of its own, as OLM makes them;
//   - Copy copies a CSV into another namespace as OLM does for an operator
//     installed in AllNamespaces mode (label olm.copiedFrom, reason Copied).
//
// Each catalog package has a CatalogSource (READY) and a PackageManifest
// (a CRD here; an aggregated API in OLM) with its channels, their entries
// (the head first) and the deprecations of the package, its channels and
// its bundles. CSVs carry OLM's operatorframework.io/properties
// annotation, which names their package. The simulator runs no operator:
// CSVs have no Deployments. It polls the API server, which is enough for
// tests; deleting what a Subscription installed is left to its owner, as in
// OLM.
package olmsim
