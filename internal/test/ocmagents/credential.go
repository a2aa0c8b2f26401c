package ocmagents

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/internal/test/testenv"
)

// AddonCredential waits until OCM's registration agent on mc has written
// the hub credential of the addon named addon, the Secret
// <addon>-hub-kubeconfig in namespace (the addon's install namespace): the
// agent asks for it by CertificateSigningRequest once the addon is enabled,
// the addon's manager on the hub approves it and grants its permissions,
// and kube-controller-manager signs it (StartControllerManager). AddonCredential
// then writes the Secret's files into
// env.Dir/<cluster>-<addon>-hub-kubeconfig/, as a kubelet mounts a Secret
// for the addon's Deployment, waits until the credential may read Policies
// in the cluster namespace, and points mc's hub fields (HubConfig, HubClient,
// HubKubeconfigPath) at it: from then on an agent run for mc uses only what
// OCM issued.
func AddonCredential(ctx context.Context, env *testenv.Env, mc *testenv.ManagedCluster, addon, namespace string) error {
	key := client.ObjectKey{Namespace: namespace, Name: addon + "-hub-kubeconfig"}
	secret := &corev1.Secret{}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, joinTimeout, true, func(ctx context.Context) (bool, error) {
		if err := mc.Client.Get(ctx, key, secret); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return len(secret.Data["kubeconfig"]) > 0 && len(secret.Data["tls.crt"]) > 0, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for Secret %s on %s (see the ManagedClusterAddOn's conditions and %s): %w",
			key, mc.Name, filepath.Join(env.Dir, "logs", "registration-agent-"+mc.Name+".log"), err)
	}
	dir := filepath.Join(env.Dir, mc.Name+"-"+addon+"-hub-kubeconfig")
	if err := mountSecret(secret, dir); err != nil {
		return err
	}
	path := filepath.Join(dir, "kubeconfig")
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return fmt.Errorf("loading %s: %w", path, err)
	}
	hubClient, err := client.New(cfg, client.Options{Scheme: controlplane.Scheme()})
	if err != nil {
		return err
	}
	if err := testenv.WaitForAccess(ctx, hubClient, mc.Name, &policyv1.PolicyList{}); err != nil {
		return fmt.Errorf("waiting for the permissions of addon %s on %s: %w", addon, mc.Name, err)
	}
	mc.HubConfig, mc.HubClient, mc.HubKubeconfigPath = cfg, hubClient, path
	return nil
}

// mountSecret writes each key of secret into dir as a file, as a kubelet
// mounts a Secret volume (the kubeconfig names tls.crt and tls.key beside
// it).
func mountSecret(secret *corev1.Secret, dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for name, data := range secret.Data {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return fmt.Errorf("writing %s of Secret %s/%s: %w", name, secret.Namespace, secret.Name, err)
		}
	}
	return nil
}
