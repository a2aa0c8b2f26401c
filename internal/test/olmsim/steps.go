package olmsim

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// operatorLabel is the label OLM puts on an operator's objects, for the
// Subscription name in namespace: "<name>.<namespace>" cut to 63
// characters, without trailing '.', '_' or '-', as OLM cuts it.
func operatorLabel(name, namespace string) string {
	label := name + "." + namespace
	if len(label) > 63 {
		label = strings.TrimRight(label[:63], "._-")
	}
	return "operators.coreos.com/" + label
}

// target is the CSV a Subscription should have, or a resolution failure
// in OLM's words.
func (s *Simulator) target(sub *unstructured.Unstructured) (string, string) {
	pkgName, _, _ := unstructured.NestedString(sub.Object, "spec", "name")
	source, _, _ := unstructured.NestedString(sub.Object, "spec", "source")
	sourceNS, _, _ := unstructured.NestedString(sub.Object, "spec", "sourceNamespace")
	channel, _, _ := unstructured.NestedString(sub.Object, "spec", "channel")
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.packages[pkgName]
	if p == nil || p.Catalog != source || p.CatalogNamespace != sourceNS {
		return "", fmt.Sprintf("no operators found from catalog %s in namespace %s referenced by subscription %s",
			source, sourceNS, sub.GetName())
	}
	if channel == "" {
		channel = p.DefaultChannel
	}
	csvs := p.Channels[channel]
	if len(csvs) == 0 {
		return "", fmt.Sprintf("no operators found in channel %s of package %s in the catalog referenced by subscription %s",
			channel, pkgName, sub.GetName())
	}
	installed, _, _ := unstructured.NestedString(sub.Object, "status", "installedCSV")
	starting, _, _ := unstructured.NestedString(sub.Object, "spec", "startingCSV")
	if installed == "" && starting != "" && slices.Contains(csvs, starting) {
		return starting, ""
	}
	return csvs[len(csvs)-1], ""
}

// subscription resolves a Subscription: a failure condition, or an
// InstallPlan for its target CSV when it has none for it yet.
func (s *Simulator) subscription(ctx context.Context, sub *unstructured.Unstructured) error {
	target, failure := s.target(sub)
	status, _, _ := unstructured.NestedMap(sub.Object, "status")
	if status == nil {
		status = map[string]any{}
	}
	if failure != "" {
		if conds, _ := status["conditions"].([]any); len(conds) == 1 && asMap(conds[0])["message"] == failure {
			return nil // reported already
		}
		status["conditions"] = []any{map[string]any{"type": "ResolutionFailed", "status": "True",
			"reason": "ConstraintsNotSatisfiable", "message": failure, "lastTransitionTime": now()}}
		return s.writeStatus(ctx, sub, status)
	}
	current, _ := status["currentCSV"].(string)
	installed, _ := status["installedCSV"].(string)
	if current == target || (installed != "" && s.phase(ctx, sub.GetNamespace(), installed) != "Succeeded") {
		return nil // resolved, or waiting for the installed CSV to be healthy before upgrading
	}
	ip, err := s.newInstallPlan(ctx, sub, target)
	if err != nil {
		return err
	}
	status["conditions"] = []any{}
	status["currentCSV"], status["state"], status["lastUpdated"] = target, "UpgradePending", now()
	status["installPlanRef"] = map[string]any{"name": ip.GetName(), "namespace": ip.GetNamespace(),
		"kind": "InstallPlan", "apiVersion": InstallPlanGVK.GroupVersion().String()}
	return s.writeStatus(ctx, sub, status)
}

// newInstallPlan creates the InstallPlan of csv for sub, approved when sub
// approves automatically.
func (s *Simulator) newInstallPlan(ctx context.Context, sub *unstructured.Unstructured, csv string) (*unstructured.Unstructured, error) {
	plans := &unstructured.UnstructuredList{}
	plans.SetGroupVersionKind(InstallPlanGVK.GroupVersion().WithKind("InstallPlanList"))
	if err := s.Client.List(ctx, plans, client.InNamespace(sub.GetNamespace())); err != nil {
		return nil, err
	}
	generation := int64(len(plans.Items) + 1)
	approval, _, _ := unstructured.NestedString(sub.Object, "spec", "installPlanApproval")
	if approval == "" {
		approval = "Automatic"
	}
	pkg, _, _ := unstructured.NestedString(sub.Object, "spec", "name")
	bundles := s.bundles(pkg, csv)
	csvs, lookups := make([]any, 0, len(bundles)), make([]any, 0, len(bundles))
	for _, b := range bundles {
		csvs = append(csvs, b.csv)
		lookups = append(lookups, map[string]any{"identifier": b.csv, "properties": b.properties()})
	}
	ip := newObject(InstallPlanGVK, sub.GetNamespace(), fmt.Sprintf("install-%s-%d", sub.GetName(), generation))
	ip.SetLabels(map[string]string{operatorLabel(sub.GetName(), sub.GetNamespace()): ""})
	ip.Object["spec"] = map[string]any{"clusterServiceVersionNames": csvs, "approval": approval,
		"approved": approval == "Automatic", "generation": generation}
	if err := s.Client.Create(ctx, ip); err != nil {
		return nil, err
	}
	for _, b := range bundles[1:] {
		if err := s.dependencySubscription(ctx, sub, ip, b); err != nil {
			return nil, err
		}
	}
	phase := "RequiresApproval"
	if approval == "Automatic" {
		phase = "Installing"
	}
	return ip, s.writeStatus(ctx, ip, map[string]any{"phase": phase,
		"catalogSources": []any{}, "bundleLookups": lookups})
}

// bundle is one bundle an InstallPlan resolves: a CSV, its package and
// the packages it requires.
type bundle struct {
	csv, pkg string
	requires []string
}

// properties are the bundle's properties as OLM writes them in an
// InstallPlan's status.bundleLookups: a JSON string of olm.package and
// olm.package.required properties.
func (b bundle) properties() string {
	props := []any{map[string]any{"type": "olm.package", "value": map[string]any{"packageName": b.pkg, "version": "1.0.0"}}}
	for _, r := range b.requires {
		props = append(props, map[string]any{"type": "olm.package.required",
			"value": map[string]any{"packageName": r, "versionRange": ">=0.0.0"}})
	}
	data, _ := json.Marshal(map[string]any{"properties": props}) // maps and strings
	return string(data)
}

// bundles are what installing csv of pkg resolves to: its bundle first,
// then the head of the default channel of each package it requires,
// transitively.
func (s *Simulator) bundles(pkg, csv string) []bundle {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []bundle{{csv: csv, pkg: pkg}}
	seen := map[string]bool{pkg: true}
	for i := 0; i < len(out); i++ {
		p := s.packages[out[i].pkg]
		if p == nil {
			continue
		}
		out[i].requires = p.Dependencies
		for _, dep := range p.Dependencies {
			d := s.packages[dep]
			if seen[dep] || d == nil || len(d.Channels[d.DefaultChannel]) == 0 {
				continue
			}
			seen[dep] = true
			head := d.Channels[d.DefaultChannel][len(d.Channels[d.DefaultChannel])-1]
			out = append(out, bundle{csv: head, pkg: dep})
		}
	}
	return out
}

// dependencySubscription creates the Subscription OLM makes for a
// dependency b of the Subscription sub, resolved by the InstallPlan ip:
// named <package>-<channel>-<catalog>-<catalog namespace>, with ip as its
// InstallPlan and b's CSV as its current one.
func (s *Simulator) dependencySubscription(ctx context.Context, sub, ip *unstructured.Unstructured, b bundle) error {
	s.mu.Lock()
	p := *s.packages[b.pkg]
	s.mu.Unlock()
	name := fmt.Sprintf("%s-%s-%s-%s", b.pkg, p.DefaultChannel, p.Catalog, p.CatalogNamespace)
	dep := newObject(SubscriptionGVK, sub.GetNamespace(), name)
	approval, _, _ := unstructured.NestedString(sub.Object, "spec", "installPlanApproval")
	dep.Object["spec"] = map[string]any{"name": b.pkg, "channel": p.DefaultChannel, "source": p.Catalog,
		"sourceNamespace": p.CatalogNamespace, "installPlanApproval": approval}
	if err := s.Client.Create(ctx, dep); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}
	return s.writeStatus(ctx, dep, map[string]any{"currentCSV": b.csv, "state": "UpgradePending", "lastUpdated": now(),
		"installPlanRef": map[string]any{"name": ip.GetName(), "namespace": ip.GetNamespace(),
			"kind": "InstallPlan", "apiVersion": InstallPlanGVK.GroupVersion().String()}})
}

// installPlan moves an InstallPlan on: approved → Installing; Installing →
// its CSVs created, Complete, and the Subscription's installedCSV set.
func (s *Simulator) installPlan(ctx context.Context, ip *unstructured.Unstructured) error {
	phase, _, _ := unstructured.NestedString(ip.Object, "status", "phase")
	approved, _, _ := unstructured.NestedBool(ip.Object, "spec", "approved")
	status, _, _ := unstructured.NestedMap(ip.Object, "status")
	switch {
	case phase == "RequiresApproval" && approved:
		status["phase"] = "Installing"
		return s.writeStatus(ctx, ip, status)
	case phase != "Installing":
		return nil
	}
	csvs, _, _ := unstructured.NestedStringSlice(ip.Object, "spec", "clusterServiceVersionNames")
	for _, csv := range csvs {
		if err := s.install(ctx, ip.GetNamespace(), csv); err != nil {
			return err
		}
	}
	status["phase"] = "Complete"
	return s.writeStatus(ctx, ip, status)
}

// install creates csv for the Subscription of ns whose current CSV it is,
// and deletes the CSV it replaces.
func (s *Simulator) install(ctx context.Context, ns, csv string) error {
	subs := &unstructured.UnstructuredList{}
	subs.SetGroupVersionKind(SubscriptionGVK.GroupVersion().WithKind("SubscriptionList"))
	if err := s.Client.List(ctx, subs, client.InNamespace(ns)); err != nil {
		return err
	}
	for i := range subs.Items {
		sub := &subs.Items[i]
		if current, _, _ := unstructured.NestedString(sub.Object, "status", "currentCSV"); current != csv {
			continue
		}
		obj := newObject(CSVGVK, ns, csv)
		obj.SetLabels(map[string]string{operatorLabel(sub.GetName(), ns): ""})
		pkg, _, _ := unstructured.NestedString(sub.Object, "spec", "name")
		obj.SetAnnotations(map[string]string{PropertiesAnnotation: bundle{csv: csv, pkg: pkg}.properties()})
		obj.Object["spec"] = map[string]any{"displayName": csv, "install": map[string]any{"strategy": "deployment",
			"spec": map[string]any{"deployments": []any{}}}}
		if err := s.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		status, _, _ := unstructured.NestedMap(sub.Object, "status")
		replaced, _ := status["installedCSV"].(string)
		status["installedCSV"], status["state"], status["lastUpdated"] = csv, "AtLatestKnown", now()
		if err := s.writeStatus(ctx, sub, status); err != nil {
			return err
		}
		if replaced != "" && replaced != csv {
			old := newObject(CSVGVK, ns, replaced)
			if err := s.Client.Delete(ctx, old); client.IgnoreNotFound(err) != nil {
				return err
			}
		}
	}
	return nil
}

// csvPhases are the phases of a CSV's installation, with OLM's reasons
// and messages.
var csvPhases = []struct{ phase, reason, message string }{
	{"Pending", "RequirementsUnknown", "requirements not yet checked"},
	{"InstallReady", "AllRequirementsMet", "all requirements found, attempting install"},
	{"Installing", "InstallSucceeded", "waiting for install components to report healthy"},
	{"Succeeded", "InstallSucceeded", "install strategy completed with no errors"},
}

// csv moves a CSV to its next phase; a failing one fails after
// Installing.
func (s *Simulator) csv(ctx context.Context, csv *unstructured.Unstructured) error {
	phase, _, _ := unstructured.NestedString(csv.Object, "status", "phase")
	next := 0
	for i, p := range csvPhases {
		if p.phase == phase {
			next = i + 1
		}
	}
	s.mu.Lock()
	failure, failing := s.failing[csv.GetName()]
	s.mu.Unlock()
	var status map[string]any
	switch {
	case phase == "Succeeded" || phase == "Failed":
		return nil
	case phase == "Installing" && failing:
		status = map[string]any{"phase": "Failed", "reason": "InstallComponentFailed",
			"message": "install strategy failed: " + failure}
	default:
		p := csvPhases[next]
		status = map[string]any{"phase": p.phase, "reason": p.reason, "message": p.message}
	}
	status["lastTransitionTime"], status["lastUpdateTime"] = now(), now()
	return s.writeStatus(ctx, csv, status)
}

// phase is the phase of CSV name in ns, "" when it does not exist.
func (s *Simulator) phase(ctx context.Context, ns, name string) string {
	csv := newObject(CSVGVK, ns, name)
	if err := s.Client.Get(ctx, client.ObjectKeyFromObject(csv), csv); err != nil {
		return ""
	}
	phase, _, _ := unstructured.NestedString(csv.Object, "status", "phase")
	return phase
}

func (s *Simulator) writeStatus(ctx context.Context, obj *unstructured.Unstructured, status map[string]any) error {
	obj.Object["status"] = status
	return s.Client.Status().Update(ctx, obj)
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// PropertiesAnnotation is the annotation of a CSV that holds its bundle's
// properties (olm.package names its package).
const PropertiesAnnotation = "operatorframework.io/properties"

// CopiedFromLabel marks a CSV OLM copied into a namespace an operator
// installed in AllNamespaces mode watches; its value is the namespace of
// the operator.
const CopiedFromLabel = "olm.copiedFrom"

// Copy copies the CSV name of namespace ns into namespace to, as OLM does
// for an operator installed in AllNamespaces mode: labelled olm.copiedFrom,
// with the Succeeded phase and reason Copied. The copy is not moved on by
// the simulator.
func (s *Simulator) Copy(ctx context.Context, ns, name, to string) error {
	orig := newObject(CSVGVK, ns, name)
	if err := s.Client.Get(ctx, client.ObjectKeyFromObject(orig), orig); err != nil {
		return fmt.Errorf("reading the CSV %s/%s to copy: %w", ns, name, err)
	}
	cp := newObject(CSVGVK, to, name)
	labels := orig.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[CopiedFromLabel] = ns
	cp.SetLabels(labels)
	cp.SetAnnotations(orig.GetAnnotations())
	cp.Object["spec"] = orig.Object["spec"]
	if err := s.Client.Create(ctx, cp); err != nil {
		return fmt.Errorf("copying the CSV %s/%s to %s: %w", ns, name, to, err)
	}
	// Note: Run may step the new copy before its status is written.
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := s.Client.Get(ctx, client.ObjectKeyFromObject(cp), cp); err != nil {
			return err
		}
		return s.writeStatus(ctx, cp, map[string]any{"phase": "Succeeded", "reason": "Copied",
			"message":            "The operator is running in " + ns + " but is managing this namespace",
			"lastTransitionTime": now(), "lastUpdateTime": now()})
	})
}
