package operatorpolicy

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
)

// The kinds of OLM (and Kubernetes) the evaluator reads and writes. It
// holds them as unstructured objects: Canopy does not link OLM's API module.
var (
	namespaceGVK     = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	subscriptionGVK  = schema.GroupVersionKind{Group: "operators.coreos.com", Version: "v1alpha1", Kind: "Subscription"}
	operatorGroupGVK = schema.GroupVersionKind{Group: "operators.coreos.com", Version: "v1", Kind: "OperatorGroup"}
	installPlanGVK   = schema.GroupVersionKind{Group: "operators.coreos.com", Version: "v1alpha1", Kind: "InstallPlan"}
	csvGVK           = schema.GroupVersionKind{Group: "operators.coreos.com", Version: "v1alpha1", Kind: "ClusterServiceVersion"}
	catalogSourceGVK = schema.GroupVersionKind{Group: "operators.coreos.com", Version: "v1alpha1", Kind: "CatalogSource"}
	crdGVK           = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}
	deploymentGVK    = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}

	packageManifestGVR = schema.GroupVersionResource{Group: "packages.operators.coreos.com", Version: "v1", Resource: "packagemanifests"}
)

// resources are the plural resource names of the kinds written, for the
// dynamic client.
var resources = map[schema.GroupVersionKind]schema.GroupVersionResource{
	namespaceGVK:     {Version: "v1", Resource: "namespaces"},
	subscriptionGVK:  subscriptionGVK.GroupVersion().WithResource("subscriptions"),
	operatorGroupGVK: operatorGroupGVK.GroupVersion().WithResource("operatorgroups"),
	installPlanGVK:   installPlanGVK.GroupVersion().WithResource("installplans"),
	csvGVK:           csvGVK.GroupVersion().WithResource("clusterserviceversions"),
	crdGVK:           crdGVK.GroupVersion().WithResource("customresourcedefinitions"),
}

// Labels and annotations, OCM's, so that both controllers recognise what
// the other manages.
const (
	// ManagedByLabel marks a Subscription an enforced OperatorPolicy
	// manages.
	ManagedByLabel = "operatorpolicy.policy.open-cluster-management.io/managed"
	// ManagedByAnnotation holds "<namespace>.<name>" of that policy.
	ManagedByAnnotation = ManagedByLabel
	// catalogSourceReady is the lastObservedState of a healthy catalog.
	catalogSourceReady = "READY"
)

// subscriptionSpec is OLM's SubscriptionSpec: the fields the policy may
// set. Unknown fields make the policy invalid, as in OCM.
type subscriptionSpec struct {
	CatalogSource          string         `json:"source,omitempty"`
	CatalogSourceNamespace string         `json:"sourceNamespace,omitempty"`
	Package                string         `json:"name"`
	Channel                string         `json:"channel,omitempty"`
	StartingCSV            string         `json:"startingCSV,omitempty"`
	InstallPlanApproval    string         `json:"installPlanApproval,omitempty"`
	Config                 map[string]any `json:"config,omitempty"`
}

// operatorGroupSpec is OLM's OperatorGroupSpec.
type operatorGroupSpec struct {
	Selector           map[string]any `json:"selector,omitempty"`
	TargetNamespaces   []string       `json:"targetNamespaces,omitempty"`
	ServiceAccountName string         `json:"serviceAccountName,omitempty"`
	StaticProvidedAPIs bool           `json:"staticProvidedAPIs,omitempty"`
	UpgradeStrategy    map[string]any `json:"upgradeStrategy,omitempty"`
}

// subscriptionStatus is what the evaluator reads of a Subscription's status.
type subscriptionStatus struct {
	CurrentCSV   string
	InstalledCSV string
	// ResolutionFailed is the ResolutionFailed condition when it is True.
	ResolutionFailed *olmCondition
}

// olmCondition is a condition of an OLM object.
type olmCondition struct{ Reason, Message string }

// readSubscriptionStatus reads the status fields of sub.
func readSubscriptionStatus(sub *unstructured.Unstructured) subscriptionStatus {
	var st subscriptionStatus
	st.CurrentCSV, _, _ = unstructured.NestedString(sub.Object, "status", "currentCSV")
	st.InstalledCSV, _, _ = unstructured.NestedString(sub.Object, "status", "installedCSV")
	conds, _, _ := unstructured.NestedSlice(sub.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != "ResolutionFailed" || m["status"] != "True" {
			continue
		}
		reason, _ := m["reason"].(string)
		message, _ := m["message"].(string)
		st.ResolutionFailed = &olmCondition{Reason: reason, Message: message}
	}
	return st
}

// opLabelName is the part after the slash of the label OLM puts on an
// operator's objects: "<name>.<namespace>", cut to 63 characters and
// ending in an alphanumeric character, as OLM does.
func opLabelName(name, namespace string) string {
	label := name + "." + namespace
	if len(label) <= 63 {
		return label
	}
	label = label[:63]
	for len(label) > 0 {
		last := label[len(label)-1]
		if last != '.' && last != '_' && last != '-' {
			break
		}
		label = label[:len(label)-1]
	}
	return label
}

// subLabelSelector selects the objects OLM labelled as the operator's of
// the Subscription name in namespace: they keep the label after the
// Subscription or CSV is gone.
func subLabelSelector(name, namespace string) labels.Selector {
	req, err := labels.NewRequirement("operators.coreos.com/"+opLabelName(name, namespace), selection.Exists, nil)
	if err != nil {
		return labels.Nothing()
	}
	return labels.NewSelector().Add(*req)
}
