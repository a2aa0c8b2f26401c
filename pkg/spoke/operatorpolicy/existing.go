package operatorpolicy

import (
	"context"
	"encoding/json"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// OLM's marks on the CSV it copies into each namespace an operator
// installed in AllNamespaces mode watches.
const (
	// copiedFromLabel holds the namespace the operator is installed in.
	copiedFromLabel = "olm.copiedFrom"
	// propertiesAnnotation holds the bundle's properties; olm.package
	// names the package.
	propertiesAnnotation = "operatorframework.io/properties"
)

// handleExistingInstallation reports an operator a musthave policy wants
// in AllNamespaces mode that is installed in another namespace already:
// OLM copied its CSV into the policy's namespace, and a Subscription here
// would stay unresolved. Every condition then says so, the CSV reports
// the copy, and under enforce a Subscription this policy created before
// the copy appeared is deleted. It reports whether it handled the policy.
func (e *evaluation) handleExistingInstallation(ctx context.Context, sub *desiredSub, og *desiredOpGroup) (bool, error) {
	if sub == nil || og == nil || !e.musthave() || len(og.spec.TargetNamespaces) != 0 {
		return false, nil
	}
	csv, err := e.findCopiedCSV(sub)
	if err != nil || csv == nil {
		return false, err
	}
	if !versionAllowed(e.versions, sub.spec.StartingCSV, csv.GetName()) {
		e.set(disallowedCSVCond(csv.GetName()), nonCompObj(refOf(csv),
			"ClusterServiceVersion ("+csv.GetName()+") is not an approved version"))
		return true, nil
	}
	source := csv.GetLabels()[copiedFromLabel]
	for _, kind := range []string{kindOpGroup, kindSubscription, kindInstallPlan, kindCRD, kindDeployment, kindCatalog} {
		e.set(existingInstallCond(kind, source))
	}
	phase, reason, message := csvState(csv)
	e.set(allowedCSVCond(csv.GetName(), phase, reason, message), csvRelated(csv))
	if err := e.checkDeprecations(sub.object(), csv); err != nil {
		return true, err
	}
	if err := e.checkMinorChannel(sub.object()); err != nil {
		return true, err
	}
	return true, e.removeStaleSubscription(ctx, sub)
}

// findCopiedCSV returns the CSV of the Subscription's package that OLM
// copied into its namespace, nil when there is none. The copies are read
// through the watcher, so that a copy appearing or going re-evaluates the
// policy.
func (e *evaluation) findCopiedCSV(sub *desiredSub) (*unstructured.Unstructured, error) {
	copied, err := labels.NewRequirement(copiedFromLabel, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	csvs, err := e.read.list(csvGVK, sub.namespace, labels.NewSelector().Add(*copied))
	if err != nil {
		return nil, err
	}
	for i := range csvs {
		if csvPackage(&csvs[i]) == sub.spec.Package {
			return &csvs[i], nil
		}
	}
	return nil, nil
}

// csvPackage is the package of a CSV, read from its olm.package property;
// "" when it has none.
func csvPackage(csv *unstructured.Unstructured) string {
	var props struct {
		Properties []struct {
			Type  string         `json:"type"`
			Value map[string]any `json:"value"`
		} `json:"properties"`
	}
	if err := json.Unmarshal([]byte(csv.GetAnnotations()[propertiesAnnotation]), &props); err != nil {
		return ""
	}
	for _, p := range props.Properties {
		if p.Type == "olm.package" {
			if name, ok := p.Value["packageName"].(string); ok {
				return name
			}
		}
	}
	return ""
}

// removeStaleSubscription deletes, under enforce, the Subscription this
// policy created (its managed-by annotation names the policy) before the
// copied CSV was seen. The OperatorGroup is left: nothing tells whether
// this policy created it.
func (e *evaluation) removeStaleSubscription(ctx context.Context, sub *desiredSub) error {
	if !e.enforce() {
		return nil
	}
	found, err := e.read.get(subscriptionGVK, sub.namespace, sub.name)
	if err != nil || found == nil {
		return err
	}
	if found.GetAnnotations()[ManagedByAnnotation] != e.policy.Namespace+"."+e.policy.Name {
		return nil
	}
	return e.remove(ctx, found)
}
