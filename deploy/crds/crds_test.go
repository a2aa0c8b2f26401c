package crds_test

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/deploy/crds"
)

// kubernetesVersion names the directory bin/k8s/<version> that
// hack/install-envtest-assets.sh fills with kube-apiserver and etcd.
const kubernetesVersion = "1.37.1"

func TestCanopyCRDs(t *testing.T) {
	g := NewWithT(t)
	got, err := crds.Canopy()
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(names(got)).To(ConsistOf(
		"policies.policy.open-cluster-management.io",
		"placementbindings.policy.open-cluster-management.io",
		"configurationpolicies.policy.open-cluster-management.io",
		"operatorpolicies.policy.open-cluster-management.io",
		"certificatepolicies.policy.open-cluster-management.io",
		"policysets.policy.open-cluster-management.io",
		"hierarchypolicies.hierarchy.canopy.io",
		"subnamespaces.hierarchy.canopy.io",
	))
	for _, crd := range got {
		template := crd.Spec.Names.Kind == "ConfigurationPolicy" || crd.Spec.Names.Kind == "HierarchyPolicy" ||
			crd.Spec.Names.Kind == "OperatorPolicy" || crd.Spec.Names.Kind == "CertificatePolicy"
		if template {
			g.Expect(crd.Labels).To(HaveKeyWithValue(policyv1.PolicyTypeLabel, policyv1.PolicyTypeTemplate), crd.Name)
		} else {
			g.Expect(crd.Labels).NotTo(HaveKey(policyv1.PolicyTypeLabel), crd.Name)
		}
	}
}

func TestOCMCRDs(t *testing.T) {
	g := NewWithT(t)
	got, err := crds.OCM()
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(names(got)).To(ConsistOf(
		"managedclusters.cluster.open-cluster-management.io",
		"clusterclaims.cluster.open-cluster-management.io",
		"managedclustersets.cluster.open-cluster-management.io",
		"managedclustersetbindings.cluster.open-cluster-management.io",
		"placements.cluster.open-cluster-management.io",
		"placementdecisions.cluster.open-cluster-management.io",
		"clustermanagementaddons.addon.open-cluster-management.io",
		"managedclusteraddons.addon.open-cluster-management.io",
		"addondeploymentconfigs.addon.open-cluster-management.io",
		"addontemplates.addon.open-cluster-management.io",
		"manifestworks.work.open-cluster-management.io",
		"appliedmanifestworks.work.open-cluster-management.io",
	))
	for _, crd := range got {
		var storage []string
		served := map[string]bool{}
		for _, v := range crd.Spec.Versions {
			if v.Storage {
				storage = append(storage, v.Name)
			}
			served[v.Name] = v.Served
		}
		g.Expect(storage).To(HaveLen(1), crd.Name)
		if crd.Spec.Group == "addon.open-cluster-management.io" && crd.Spec.Names.Kind != "AddOnTemplate" {
			// addon-framework v1.3.0's clients use v1beta1.
			g.Expect(served).To(HaveKeyWithValue("v1beta1", true), crd.Name)
		}
		switch crd.Spec.Names.Kind {
		case "ManagedClusterAddOn", "ClusterManagementAddOn":
			g.Expect(storage).To(Equal([]string{"v1beta1"}), crd.Name)
		}
	}
}

func TestAdmissionPolicies(t *testing.T) {
	g := NewWithT(t)
	got, err := crds.AdmissionPolicies()
	g.Expect(err).NotTo(HaveOccurred())

	policies := map[string]bool{}
	var bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	for _, obj := range got {
		switch obj := obj.(type) {
		case *admissionregistrationv1.ValidatingAdmissionPolicy:
			policies[obj.Name] = true
		case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
			bindings = append(bindings, obj)
		default:
			t.Fatalf("unexpected %T", obj)
		}
	}
	g.Expect(policies).NotTo(BeEmpty())
	g.Expect(bindings).To(HaveLen(len(policies)))
	for _, b := range bindings {
		g.Expect(policies).To(HaveKey(b.Spec.PolicyName), "binding %s", b.Name)
	}
}

// TestInstall installs every CRD and admission policy on a real API server.
func TestInstall(t *testing.T) {
	g := NewWithT(t)
	assets, err := assetsDir()
	g.Expect(err).NotTo(HaveOccurred())
	canopy, err := crds.Canopy()
	g.Expect(err).NotTo(HaveOccurred())
	ocm, err := crds.OCM()
	g.Expect(err).NotTo(HaveOccurred())
	admission, err := crds.AdmissionPolicies()
	g.Expect(err).NotTo(HaveOccurred())

	env := &envtest.Environment{
		CRDs:                  append(canopy, ocm...),
		BinaryAssetsDirectory: assets,
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(env.Stop()).To(Succeed()) })

	scheme := k8sruntime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	g.Expect(apiextensionsv1.AddToScheme(scheme)).To(Succeed())
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	for _, obj := range admission {
		g.Expect(c.Create(t.Context(), obj)).To(Succeed(), obj.GetName())
	}

	// The stored versions are what hack/copy-ocm-crds.sh chose.
	mca := &apiextensionsv1.CustomResourceDefinition{}
	g.Expect(c.Get(t.Context(), client.ObjectKey{Name: "managedclusteraddons.addon.open-cluster-management.io"}, mca)).To(Succeed())
	g.Expect(mca.Status.StoredVersions).To(Equal([]string{"v1beta1"}))
}

func names(crds []*apiextensionsv1.CustomResourceDefinition) []string {
	var out []string
	for _, crd := range crds {
		out = append(out, crd.Name)
	}
	return out
}

// assetsDir returns bin/k8s/<version> of the repository, which must hold
// kube-apiserver and etcd.
func assetsDir() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("cannot locate the test source")
	}
	dir := filepath.Dir(file)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above " + file)
		}
		dir = parent
	}
	assets := filepath.Join(dir, "bin", "k8s", kubernetesVersion)
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(assets, bin)); err != nil {
			return "", errors.Join(err, errors.New("run make envtest-assets"))
		}
	}
	return assets, nil
}
