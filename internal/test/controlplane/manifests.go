package controlplane

import (
	"context"
	"fmt"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/canopy-policy/canopy/deploy/crds"
)

// manifests are what every control plane gets: Canopy's and OCM's CRDs, and
// Canopy's admission policies (a managed cluster needs the Policy CRDs too,
// since the agent mirrors policies locally).
type manifests struct {
	crds      []*apiextensionsv1.CustomResourceDefinition
	admission []client.Object
}

var parsedManifests = sync.OnceValues(func() (*manifests, error) {
	canopy, err := crds.Canopy()
	if err != nil {
		return nil, fmt.Errorf("loading Canopy's CRDs: %w", err)
	}
	ocm, err := crds.OCM()
	if err != nil {
		return nil, fmt.Errorf("loading OCM's CRDs: %w", err)
	}
	admission, err := crds.AdmissionPolicies()
	if err != nil {
		return nil, fmt.Errorf("loading admission policies: %w", err)
	}
	return &manifests{crds: append(canopy, ocm...), admission: admission}, nil
})

// loadManifests returns a copy of the manifests that the caller may mutate
// (envtest does).
func loadManifests() (*manifests, error) {
	m, err := parsedManifests()
	if err != nil {
		return nil, err
	}
	out := &manifests{}
	for _, crd := range m.crds {
		out.crds = append(out.crds, crd.DeepCopy())
	}
	for _, obj := range m.admission {
		out.admission = append(out.admission, obj.DeepCopyObject().(client.Object))
	}
	return out, nil
}

// CreateAll creates objs, leaving those that exist as they are.
func CreateAll(ctx context.Context, c client.Client, objs []client.Object) error {
	for _, obj := range objs {
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
	}
	return nil
}

// Connect reaches an existing cluster through kubeconfig and installs the
// manifests it lacks.
func Connect(ctx context.Context, name, kubeconfig string) (*ControlPlane, error) {
	cfg, err := loadKubeconfig(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig of %s: %w", name, err)
	}
	c, err := client.New(cfg, client.Options{Scheme: Scheme()})
	if err != nil {
		return nil, err
	}
	objs, err := loadManifests()
	if err != nil {
		return nil, err
	}
	crdObjs := make([]client.Object, 0, len(objs.crds))
	for _, crd := range objs.crds {
		crdObjs = append(crdObjs, crd)
	}
	if err := CreateAll(ctx, c, crdObjs); err != nil {
		return nil, fmt.Errorf("installing CRDs on %s: %w", name, err)
	}
	if err := envtest.WaitForCRDs(cfg, objs.crds, envtest.CRDInstallOptions{PollInterval: 100 * time.Millisecond, MaxTime: time.Minute}); err != nil {
		return nil, fmt.Errorf("waiting for the CRDs of %s: %w", name, err)
	}
	if err := CreateAll(ctx, c, objs.admission); err != nil {
		return nil, fmt.Errorf("installing admission policies on %s: %w", name, err)
	}
	return &ControlPlane{Name: name, Config: cfg, Client: c, KubeconfigPath: kubeconfig}, nil
}
