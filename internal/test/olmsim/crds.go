package olmsim

import (
	"bufio"
	"bytes"
	"context"
	_ "embed" // for go:embed
	"errors"
	"fmt"
	"io"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

//go:embed crds.yaml
var crdsYAML []byte

// CRDs returns the CRDs of OLM's kinds: OperatorGroup, Subscription,
// InstallPlan, ClusterServiceVersion, CatalogSource and PackageManifest.
func CRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var crds []*apiextensionsv1.CustomResourceDefinition
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(crdsYAML)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return crds, nil
		}
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(doc, crd); err != nil {
			return nil, fmt.Errorf("decoding olmsim's CRDs: %w", err)
		}
		if crd.Name != "" {
			crds = append(crds, crd)
		}
	}
}

// Install creates OLM's CRDs on the cluster of cfg and waits until they
// are served.
func Install(ctx context.Context, cfg *rest.Config, c client.Client) error {
	crds, err := CRDs()
	if err != nil {
		return err
	}
	for _, crd := range crds {
		if err := c.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating the CRD %s: %w", crd.Name, err)
		}
	}
	return envtest.WaitForCRDs(cfg, crds, envtest.CRDInstallOptions{PollInterval: 100 * time.Millisecond, MaxTime: time.Minute})
}
