package operatorpolicy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
)

// errNoPackageManifest says the defaults of the Subscription need a
// PackageManifest that is not there (yet): the policy is evaluated again
// later, since PackageManifests are not watched.
var errNoPackageManifest = errors.New("the subscription defaults could not be determined because the PackageManifest was not found")

// desiredSub is the Subscription the policy describes.
type desiredSub struct {
	name, namespace string
	spec            subscriptionSpec
}

// desiredOpGroup is the OperatorGroup the policy describes, or the default
// one (AllNamespaces, generateName "<namespace>-") when it names none.
type desiredOpGroup struct {
	name, generateName, namespace string
	spec                          operatorGroupSpec
	// specified says the policy describes it.
	specified bool
}

// canonicalVersions splits entries at commas and drops blanks, as OCM does.
func canonicalVersions(entries []string) []string {
	var out []string
	for _, entry := range entries {
		for v := range strings.SplitSeq(entry, ",") {
			if v = strings.TrimSpace(v); v != "" {
				out = append(out, v)
			}
		}
	}
	return out
}

// versionAllowed reports whether CSV name is allowed by versions (all are
// when there are none) or is the Subscription's startingCSV.
func versionAllowed(versions []string, startingCSV, name string) bool {
	return len(versions) == 0 || slices.Contains(versions, name) || (startingCSV != "" && startingCSV == name)
}

// buildSubscription reads spec.subscription: its namespace, its name (the
// package, which names the Subscription) and the rest of OLM's
// SubscriptionSpec, from subscription (spec.subscription, its templates
// resolved). installPlanApproval is the policy's to decide: Manual,
// unless an enforced policy approves every version automatically.
func buildSubscription(policy *policyv1beta1.OperatorPolicy, subscription []byte, versions []string) (*desiredSub, error) {
	raw := map[string]any{}
	if err := json.Unmarshal(subscription, &raw); err != nil {
		return nil, fmt.Errorf("the policy spec.subscription is invalid: %w", err)
	}
	name, ok := raw["name"].(string)
	if !ok || name == "" {
		return nil, errors.New("name is required in spec.subscription")
	}
	if errs := validation.IsDNS1123Label(name); len(errs) != 0 {
		return nil, fmt.Errorf("the name '%v' used for the subscription is invalid: %s", name, strings.Join(errs, ", "))
	}
	ns, _ := raw["namespace"].(string)
	if ns != "" && len(validation.IsDNS1123Label(ns)) != 0 {
		return nil, fmt.Errorf("the namespace '%v' used for the subscription is not a valid namespace identifier", ns)
	}
	delete(raw, "namespace") // not a field of the Subscription's spec
	sub := &desiredSub{name: name, namespace: ns}
	if err := decodeStrict(raw, &sub.spec); err != nil {
		return nil, fmt.Errorf("the policy spec.subscription is invalid: %w", err)
	}
	if sub.spec.InstallPlanApproval != "" {
		return nil, errors.New("installPlanApproval is prohibited in spec.subscription")
	}
	sub.spec.InstallPlanApproval = "Manual"
	if policy.Spec.RemediationAction.IsEnforce() && policy.Spec.UpgradeApproval == "Automatic" && len(versions) == 0 {
		sub.spec.InstallPlanApproval = "Automatic"
	}
	return sub, nil
}

// buildOperatorGroup reads spec.operatorGroup, its templates resolved, for
// the namespace of the Subscription.
func (e *evaluation) buildOperatorGroup(namespace string) (*desiredOpGroup, error) {
	if e.policy.Spec.OperatorGroup == nil {
		return buildOperatorGroup(nil, namespace)
	}
	raw, err := e.resolveRaw(e.policy.Spec.OperatorGroup.Raw)
	if err != nil {
		return nil, fmt.Errorf("could not build operator group: %w", err)
	}
	return buildOperatorGroup(raw, namespace)
}

// buildOperatorGroup reads operatorGroup (spec.operatorGroup, nil when the
// policy has none) for the namespace of the Subscription.
func buildOperatorGroup(operatorGroup []byte, namespace string) (*desiredOpGroup, error) {
	if operatorGroup == nil {
		return &desiredOpGroup{generateName: namespace + "-", namespace: namespace}, nil
	}
	raw := map[string]any{}
	if err := json.Unmarshal(operatorGroup, &raw); err != nil {
		return nil, fmt.Errorf("the policy spec.operatorGroup is invalid: %w", err)
	}
	if ns, _ := raw["namespace"].(string); ns != "" && ns != namespace && namespace != "" {
		return nil, fmt.Errorf("the namespace specified in spec.operatorGroup ('%v') must match "+
			"the namespace used for the subscription ('%v')", ns, namespace)
	}
	name, ok := raw["name"].(string)
	if !ok {
		return nil, errors.New("name is required in spec.operatorGroup")
	}
	delete(raw, "name")
	delete(raw, "namespace")
	og := &desiredOpGroup{name: name, namespace: namespace, specified: true}
	if err := decodeStrict(raw, &og.spec); err != nil {
		return nil, fmt.Errorf("the policy spec.operatorGroup is invalid: %w", err)
	}
	return og, nil
}

// decodeStrict decodes raw into out, refusing fields out does not have.
func decodeStrict(raw map[string]any, out any) error {
	data, err := json.Marshal(raw)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(out)
}

// applySubscriptionDefaults fills in the channel, catalog and namespace the
// policy leaves out, from the package's PackageManifest (pm), else from
// the Subscription already on the cluster (found). known is the namespace
// of the Subscription the status already relates, if any.
func applySubscriptionDefaults(sub *desiredSub, pm, found *unstructured.Unstructured, known string) error {
	s := &sub.spec
	if s.Channel != "" && s.CatalogSource != "" && s.CatalogSourceNamespace != "" && sub.namespace != "" {
		return nil
	}
	if pm == nil {
		if found == nil {
			return errNoPackageManifest
		}
		fromExisting(s, found)
		return nil
	}
	catalog, _, _ := unstructured.NestedString(pm.Object, "status", "catalogSource")
	catalogNS, _, _ := unstructured.NestedString(pm.Object, "status", "catalogSourceNamespace")
	if catalog == "" || catalogNS == "" {
		return errors.New("the subscription defaults could not be determined because the PackageManifest didn't specify a catalog")
	}
	if (s.CatalogSource != "" && s.CatalogSource != catalog) || (s.CatalogSourceNamespace != "" && s.CatalogSourceNamespace != catalogNS) {
		return errors.New("the subscription defaults could not be determined because the catalog specified in the policy does " +
			"not match what was found in the PackageManifest on the cluster")
	}
	if s.Channel == "" {
		if s.Channel, _, _ = unstructured.NestedString(pm.Object, "status", "defaultChannel"); s.Channel == "" {
			return errors.New("the default channel could not be determined because the PackageManifest didn't specify one")
		}
	}
	s.CatalogSource, s.CatalogSourceNamespace = catalog, catalogNS
	if sub.namespace == "" {
		sub.namespace = known
	}
	if sub.namespace == "" {
		sub.namespace = suggestedNamespace(pm, s.Channel)
	}
	return nil
}

// fromExisting takes what the policy leaves out from the Subscription on
// the cluster.
func fromExisting(s *subscriptionSpec, found *unstructured.Unstructured) {
	for field, value := range map[string]*string{
		"channel": &s.Channel, "source": &s.CatalogSource, "sourceNamespace": &s.CatalogSourceNamespace,
	} {
		if *value == "" {
			*value, _, _ = unstructured.NestedString(found.Object, "spec", field)
		}
	}
}

// suggestedNamespace is the namespace the package's channel suggests.
func suggestedNamespace(pm *unstructured.Unstructured, channel string) string {
	channels, _, _ := unstructured.NestedSlice(pm.Object, "status", "channels")
	for _, c := range channels {
		m, ok := c.(map[string]any)
		if !ok || m["name"] != channel {
			continue
		}
		ns, _, _ := unstructured.NestedString(m, "currentCSVDesc", "annotations", "operatorframework.io/suggested-namespace")
		return ns
	}
	return ""
}

// overlapError is the error of an enforced policy whose Subscription other
// enforced policies (overlappers, "name.namespace", this one included)
// also manage.
func overlapError(overlappers []string) error {
	return fmt.Errorf("the specified operator is managed by multiple enforced policies (%v)", strings.Join(overlappers, ", "))
}

// object returns the Subscription as an object to create or merge.
func (d *desiredSub) object() *unstructured.Unstructured {
	return newObject(subscriptionGVK, d.namespace, d.name, "", d.spec)
}

// object returns the OperatorGroup as an object to create or merge.
func (d *desiredOpGroup) object() *unstructured.Unstructured {
	return newObject(operatorGroupGVK, d.namespace, d.name, d.generateName, d.spec)
}

func (d *desiredOpGroup) ref() ref {
	name := d.name
	if name == "" {
		name = d.generateName
	}
	return ref{gvk: operatorGroupGVK, namespace: d.namespace, name: name}
}

func (d *desiredSub) ref() ref {
	return ref{gvk: subscriptionGVK, namespace: d.namespace, name: d.name}
}

func newObject(gvk schema.GroupVersionKind, ns, name, generateName string, spec any) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{}}
	obj.SetGroupVersionKind(gvk)
	obj.SetNamespace(ns)
	obj.SetName(name)
	obj.SetGenerateName(generateName)
	data, _ := json.Marshal(spec) // plain structs and maps of JSON values
	m := map[string]any{}
	_ = json.Unmarshal(data, &m)
	obj.Object["spec"] = m
	return obj
}
