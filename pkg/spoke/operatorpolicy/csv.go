package operatorpolicy

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
)

const (
	kindCSV        = "ClusterServiceVersion"
	kindCRD        = "CustomResourceDefinition"
	kindDeployment = "Deployment"
	kindCatalog    = "CatalogSource"
)

// csvState is what the evaluator reads of a CSV's status.
func csvState(csv *unstructured.Unstructured) (phase, reason, message string) {
	phase, _, _ = unstructured.NestedString(csv.Object, "status", "phase")
	reason, _, _ = unstructured.NestedString(csv.Object, "status", "reason")
	message, _, _ = unstructured.NestedString(csv.Object, "status", "message")
	return phase, reason, message
}

func csvRelated(csv *unstructured.Unstructured) policyv1.RelatedObject {
	phase, reason, _ := csvState(csv)
	return csvObj(refOf(csv), phase, reason)
}

// handleCSV reports the Subscription's installed CSV (by its phase, and
// whether its version is allowed); a mustnothave policy deletes the
// operator's CSVs. It returns the installed CSV, nil when there is none.
func (e *evaluation) handleCSV(ctx context.Context, sub *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if sub == nil {
		e.set(noCSVCond, placeholder(csvGVK, "", inapplicable, "No relevant ClusterServiceVersion found"))
		return nil, nil
	}
	csvs, err := e.read.list(csvGVK, sub.GetNamespace(), subLabelSelector(sub.GetName(), sub.GetNamespace()))
	if err != nil {
		return nil, err
	}
	installed := readSubscriptionStatus(sub).InstalledCSV
	var found *unstructured.Unstructured
	var rel []policyv1.RelatedObject
	for i := range csvs {
		if installed == "" || installed == csvs[i].GetName() {
			// the Subscription knowing no CSV, each is related
			rel = append(rel, csvRelated(&csvs[i]))
		}
		if installed != "" && installed == csvs[i].GetName() {
			found = &csvs[i]
		}
	}
	if !e.musthave() {
		return found, e.mustnothaveCSV(ctx, csvs, sub.GetNamespace())
	}
	if found == nil {
		if len(rel) == 0 {
			rel = append(rel, missingWantedObj(ref{gvk: csvGVK, namespace: sub.GetNamespace(), name: sub.GetName()}))
		}
		e.set(missingWantedCond(kindCSV), rel...)
		return nil, nil
	}
	starting, _, _ := unstructured.NestedString(sub.Object, "spec", "startingCSV")
	if !versionAllowed(e.versions, starting, found.GetName()) {
		e.set(disallowedCSVCond(found.GetName()), nonCompObj(refOf(found),
			"ClusterServiceVersion ("+found.GetName()+") is not an approved version"))
		return found, nil
	}
	phase, reason, message := csvState(found)
	e.set(allowedCSVCond(found.GetName(), phase, reason, message), rel...)
	return found, nil
}

func (e *evaluation) mustnothaveCSV(ctx context.Context, csvs []unstructured.Unstructured, namespace string) error {
	if len(csvs) == 0 {
		e.set(missingNotWantedCond(kindCSV), placeholder(csvGVK, namespace, compliant, reasonWantNotFoundDNE))
		return nil
	}
	rel := make([]policyv1.RelatedObject, len(csvs))
	names := make([]string, len(csvs))
	for i := range csvs {
		rel[i], names[i] = leftoverObj(refOf(&csvs[i])), csvs[i].GetName()
	}
	if e.policy.Spec.RemovalBehavior.ApplyDefaults().CSVs.IsKeep() {
		e.set(keptCond(kindCSV), rel...)
		return nil
	}
	return e.removeAll(ctx, kindCSV, csvs, names)
}

// removeAll reports objs (of kind) as present, and under enforce deletes
// them; names identify them in the messages (none for CRDs, as in OCM).
func (e *evaluation) removeAll(ctx context.Context, kind string, objs []unstructured.Unstructured, names []string) error {
	rel := make([]policyv1.RelatedObject, len(objs))
	for i := range objs {
		rel[i] = foundNotWantedObj(refOf(&objs[i]))
	}
	e.set(foundNotWantedCond(kind, names...), rel...)
	if !e.enforce() {
		return nil
	}
	deleting := false
	for i := range objs {
		if objs[i].GetDeletionTimestamp() != nil {
			deleting, rel[i] = true, deletingObj(refOf(&objs[i]))
			continue
		}
		if err := e.remove(ctx, &objs[i]); err != nil {
			e.set(foundNotWantedCond(kind, names...), rel...)
			return fmt.Errorf("deleting %s %s: %w", kind, objs[i].GetName(), err)
		}
		rel[i] = deletedObj(refOf(&objs[i]))
	}
	if deleting {
		e.set(deletingCond(kind, names...), rel...)
		return nil
	}
	e.set(deletedCond(kind, names...), rel...)
	return nil
}

// handleCRDs reports the CRDs OLM labelled as the operator's; a
// mustnothave policy deletes them only when removalBehavior says Delete.
func (e *evaluation) handleCRDs(ctx context.Context, sub *unstructured.Unstructured) error {
	none := placeholder(crdGVK, "", inapplicable, "No relevant CustomResourceDefinitions found")
	if sub == nil {
		e.set(noCRDCond, none)
		return nil
	}
	crds, err := e.read.list(crdGVK, "", subLabelSelector(sub.GetName(), sub.GetNamespace()))
	if err != nil {
		return err
	}
	if len(crds) == 0 {
		e.set(noCRDCond, none)
		return nil
	}
	rel := make([]policyv1.RelatedObject, len(crds))
	for i := range crds {
		rel[i] = matchedObj(refOf(&crds[i]))
		if !e.musthave() {
			rel[i] = leftoverObj(refOf(&crds[i]))
		}
	}
	switch {
	case e.musthave():
		e.set(crdFoundCond, rel...)
	case e.policy.Spec.RemovalBehavior.ApplyDefaults().CRDs.IsKeep():
		e.set(keptCond(kindCRD), rel...)
	default:
		return e.removeAll(ctx, kindCRD, crds, nil)
	}
	return nil
}

// handleDeployments reports the Deployments of the installed CSV's install
// strategy.
func (e *evaluation) handleDeployments(csv *unstructured.Unstructured) error {
	if csv == nil {
		if e.musthave() {
			e.set(noDeploymentsCond, placeholder(deploymentGVK, "", inapplicable, "No relevant deployments found"))
		} else {
			e.set(notApplicableCond(kindDeployment))
		}
		return nil
	}
	config := e.policy.Spec.ComplianceConfig.DeploymentsUnavailable
	specs, _, _ := unstructured.NestedSlice(csv.Object, "spec", "install", "spec", "deployments")
	var rel []policyv1.RelatedObject
	var unavailable []string
	exist := false
	for _, s := range specs {
		name, _, _ := unstructured.NestedString(asMap(s), "name")
		dep, err := e.read.get(deploymentGVK, csv.GetNamespace(), name)
		if err != nil {
			return err
		}
		r := ref{gvk: deploymentGVK, namespace: csv.GetNamespace(), name: name}
		if dep == nil {
			rel = append(rel, related(r, map[bool]string{true: noncompliant, false: compliant}[e.musthave()],
				map[bool]string{true: reasonWantFoundDNE, false: reasonWantNotFoundDNE}[e.musthave()], false))
			continue
		}
		exist = true
		rel = append(rel, e.deploymentObj(dep, config, &unavailable))
	}
	if !e.musthave() {
		e.set(notApplicableCond(kindDeployment), rel...)
		return nil
	}
	e.set(deploymentCond(config, exist, unavailable), rel...)
	return nil
}

func (e *evaluation) deploymentObj(dep *unstructured.Unstructured, config policyv1beta1.ComplianceConfigAction,
	unavailable *[]string) policyv1.RelatedObject {
	n, _, _ := unstructured.NestedInt64(dep.Object, "status", "unavailableReplicas")
	if n > 0 {
		*unavailable = append(*unavailable, dep.GetName())
	}
	if !e.musthave() {
		return foundNotApplicableObj(refOf(dep))
	}
	switch {
	case n == 0:
		return related(refOf(dep), compliant, "Deployment Available", true)
	case config == "Compliant":
		return related(refOf(dep), compliant,
			"Deployment Unavailable (policy compliance is not impacted due to spec.complianceConfig.deploymentsUnavailable)", true)
	}
	return related(refOf(dep), noncompliant, "Deployment Unavailable", true)
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// handleCatalogSource reports the health of the Subscription's catalog.
func (e *evaluation) handleCatalogSource(sub *unstructured.Unstructured) error {
	if sub == nil {
		if e.musthave() {
			e.set(invalidCausingUnknownCond(kindCatalog))
			return nil
		}
		c := notApplicableCond(kindCatalog)
		c.Status = "False" // this condition's polarity is reversed
		e.set(c)
		return nil
	}
	name, _, _ := unstructured.NestedString(sub.Object, "spec", "source")
	ns, _, _ := unstructured.NestedString(sub.Object, "spec", "sourceNamespace")
	catalog, err := e.read.get(catalogSourceGVK, ns, name)
	if err != nil {
		return err
	}
	r := ref{gvk: catalogSourceGVK, namespace: ns, name: name}
	if !e.musthave() {
		c := notApplicableCond(kindCatalog)
		c.Status = "False"
		rel := related(r, compliant, reasonWantNotFoundDNE, false)
		if catalog != nil {
			rel = foundNotApplicableObj(refOf(catalog))
		}
		e.set(c, rel)
		return nil
	}
	e.musthaveCatalogSource(r, catalog)
	return nil
}

func (e *evaluation) musthaveCatalogSource(r ref, catalog *unstructured.Unstructured) {
	missing := catalog == nil
	unhealthy := missing
	if catalog != nil {
		state, found, _ := unstructured.NestedString(catalog.Object, "status", "connectionState", "lastObservedState")
		if !found {
			e.set(catalogSourceUnknownCond, related(r, noncompliant, "Resource found but current state is unknown", false))
			return
		}
		unhealthy = state != catalogSourceReady
	}
	config := e.policy.Spec.ComplianceConfig.CatalogSourceUnhealthy
	state, reason := compliant, reasonWantFoundExists
	if unhealthy {
		reason = reasonWantFoundExists + " but is unhealthy"
	}
	if missing {
		reason = reasonWantFoundDNE
	}
	if unhealthy && config != "Compliant" {
		state = noncompliant
	}
	e.set(catalogSourceFindCond(config, unhealthy, missing, r.name), related(r, state, reason, false))
}
