// Package scheme builds the one runtime.Scheme that every Canopy binary and
// test uses, so that a type registered for one is registered for all.
package scheme

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
)

// New returns a new scheme with Kubernetes' built-in types, CRDs, Canopy's
// API groups and the OCM groups Canopy consumes (cluster, addon, work).
//
// Note: it returns a fresh scheme each call; callers may add to it without
// affecting others.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme,
		apiextensionsv1.AddToScheme,
		policyv1.AddToScheme,
		policyv1beta1.AddToScheme,
		hierarchyv1alpha1.AddToScheme,
		clusterv1.Install,
		clusterv1beta1.Install,
		clusterv1beta2.Install,
		addonv1alpha1.Install,
		addonv1beta1.Install,
		workv1.Install,
	} {
		utilruntime.Must(add(s))
	}
	return s
}
