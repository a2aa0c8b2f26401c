package addon

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"path"
	"text/template"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/canopy-policy/canopy/deploy/crds"
	"github.com/canopy-policy/canopy/deploy/spoke/rbac"
)

//go:embed manifests/*.yaml
var manifestFiles embed.FS

// templates are the agent's per-cluster manifests. Values are written with
// the json function: JSON is YAML, and quoting that way keeps any value
// from changing the document's structure.
var templates = template.Must(template.New("manifests").Funcs(template.FuncMap{
	"json": func(v any) (string, error) {
		b, err := json.Marshal(v)
		return string(b), err
	},
}).Option("missingkey=error").ParseFS(manifestFiles, "manifests/*.yaml"))

// decoder decodes the rendered manifests into typed objects.
var decoder = func() runtime.Decoder {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return serializer.NewCodecFactory(s).UniversalDeserializer()
}()

// hubOnlyCRDs are Canopy CRDs the agent does not need: only the hub binds
// and groups policies.
var hubOnlyCRDs = map[string]bool{
	"placementbindings.policy.open-cluster-management.io": true,
	"policysets.policy.open-cluster-management.io":        true,
}

// render renders every template with v, in file name order; a template that
// renders to nothing (such as the Namespace in OCM's shared namespace) is
// skipped.
func render(v values) ([]runtime.Object, error) {
	names, err := fs.Glob(manifestFiles, "manifests/*.yaml")
	if err != nil {
		return nil, err
	}
	var objs []runtime.Object
	for _, name := range names {
		var buf bytes.Buffer
		if err := templates.ExecuteTemplate(&buf, path.Base(name), v); err != nil {
			return nil, fmt.Errorf("rendering %s: %w", name, err)
		}
		if len(bytes.TrimSpace(buf.Bytes())) == 0 {
			continue
		}
		obj, _, err := decoder.Decode(buf.Bytes(), nil, nil)
		if err != nil {
			return nil, fmt.Errorf("decoding %s: %w", name, err)
		}
		objs = append(objs, obj)
	}
	return objs, nil
}

// staticManifests are the manifests every cluster gets unchanged: the
// agent's ClusterRoles (deploy/spoke/rbac/role.yaml for its machinery,
// deploy/spoke/rbac/enforcement/role.yaml for what policies enforce) and the agent CRDs
// (deploy/crds) but those only the hub uses.
func staticManifests() ([]runtime.Object, error) {
	var objs []runtime.Object
	for _, get := range []func() (*rbacv1.ClusterRole, error){rbac.ClusterRole, rbac.EnforcementClusterRole} {
		role, err := get()
		if err != nil {
			return nil, err
		}
		role.APIVersion, role.Kind = "rbac.authorization.k8s.io/v1", "ClusterRole"
		objs = append(objs, role)
	}
	all, err := crds.Canopy()
	if err != nil {
		return nil, fmt.Errorf("reading the Canopy CRDs: %w", err)
	}
	for _, crd := range all {
		if hubOnlyCRDs[crd.Name] {
			continue
		}
		// Note: disabling the addon must not delete the CRDs, which would
		// delete every policy and template on the cluster with them.
		metav1.SetMetaDataAnnotation(&crd.ObjectMeta, DeletionOrphanAnnotation, "")
		objs = append(objs, crd)
	}
	return objs, nil
}

// DeletionOrphanAnnotation makes OCM leave an object on the managed cluster
// when the addon is disabled (its ManifestWork deleted).
const DeletionOrphanAnnotation = "addon.open-cluster-management.io/deletion-orphan"
