package ocmagents

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"text/template"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/internal/test/testenv"
)

// The hub's bootstrap identity, as OCM's cluster-manager chart creates it
// (createBootstrapSA): a ServiceAccount whose token registration agents
// present to create their ManagedCluster and CertificateSigningRequest, and
// nothing else.
const (
	// BootstrapNamespace is the namespace of the bootstrap ServiceAccount
	// (OCM's operator namespace).
	BootstrapNamespace = "open-cluster-management"
	// BootstrapServiceAccount is the bootstrap ServiceAccount in
	// BootstrapNamespace.
	BootstrapServiceAccount = "agent-registration-bootstrap"
	// bootstrapTokenTTL is the lifetime of the bootstrap token a join uses.
	bootstrapTokenTTL = time.Hour
)

// BootstrapUser is the hub user of the bootstrap ServiceAccount.
const BootstrapUser = "system:serviceaccount:" + BootstrapNamespace + ":" + BootstrapServiceAccount

// bootstrapRBACFiles are the ClusterRole open-cluster-management:bootstrap
// and its binding to BootstrapServiceAccount, from OCM's chart.
var bootstrapRBACFiles = []string{
	"deploy/cluster-manager/chart/cluster-manager/templates/bootstrap_cluster_role.yaml",
	"deploy/cluster-manager/chart/cluster-manager/templates/bootstrap_sa_cluster_role_binding.yaml",
}

// ensureBootstrapIdentity creates the hub's bootstrap ServiceAccount and its
// RBAC, rendered from OCM's chart. It is idempotent.
func ensureBootstrapIdentity(ctx context.Context, hub client.Client) error {
	data := map[string]any{
		"Values":  map[string]any{"createBootstrapSA": true, "createBootstrapToken": false},
		"Release": map[string]any{"Namespace": BootstrapNamespace},
	}
	rbac := []client.Object{&rbacv1.ClusterRole{}, &rbacv1.ClusterRoleBinding{}} // bootstrapRBACFiles, in order
	for i, obj := range rbac {
		if err := renderManifest(bootstrapRBACFiles[i], data, obj); err != nil {
			return err
		}
	}
	objs := append([]client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: BootstrapNamespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: BootstrapServiceAccount, Namespace: BootstrapNamespace}},
	}, rbac...)
	if err := controlplane.CreateAll(ctx, hub, objs); err != nil {
		return fmt.Errorf("writing the hub's bootstrap identity: %w", err)
	}
	return nil
}

// writeBootstrapKubeconfig writes, as `clusteradm get token` prints it, a
// kubeconfig for the hub with a new token of BootstrapServiceAccount, to
// env.Dir/<cluster>-bootstrap.kubeconfig, and returns its path.
func writeBootstrapKubeconfig(ctx context.Context, env *testenv.Env, cluster string) (string, error) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: BootstrapServiceAccount, Namespace: BootstrapNamespace}}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To(int64(bootstrapTokenTTL.Seconds())),
	}}
	if err := env.Hub.Client.SubResource("token").Create(ctx, sa, tr); err != nil {
		return "", fmt.Errorf("requesting a bootstrap token: %w", err)
	}
	cfg := rest.AnonymousClientConfig(env.Hub.Config)
	cfg.BearerToken = tr.Status.Token
	if err := waitAuthorized(ctx, cfg); err != nil {
		return "", err
	}
	path := filepath.Join(env.Dir, cluster+"-bootstrap.kubeconfig")
	if err := controlplane.WriteKubeconfig(path, "bootstrap", cfg); err != nil {
		return "", err
	}
	return path, nil
}

// waitAuthorized waits until the bootstrap identity of cfg may create
// ManagedClusters and CertificateSigningRequests on the hub.
//
// Note: a registration agent whose first request is refused (a token of a
// ServiceAccount the hub's authenticator has not seen yet, a
// ClusterRoleBinding its authorizer has not seen yet) takes the refusal as
// an expired bootstrap: it skips creating its ManagedCluster until its next
// resync, long after any join would have given up (OCM's
// ManagedClusterCreatingController). On a loaded machine that happened.
func waitAuthorized(ctx context.Context, cfg *rest.Config) error {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	wanted := []authorizationv1.ResourceAttributes{
		{Verb: "create", Group: clusterv1.GroupName, Resource: "managedclusters"},
		{Verb: "create", Group: certificatesv1.GroupName, Resource: "certificatesigningrequests"},
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, attrs := range wanted {
			review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}
			got, err := kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
			if err != nil || !got.Status.Allowed {
				return false, nil //nolint:nilerr // refused or not allowed yet: ask again
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the hub to authorize the bootstrap identity: %w", err)
	}
	return nil
}

// renderManifest renders the ocm module's file (a Go template, as OCM's
// controllers and chart render it) with data into obj.
func renderManifest(file string, data any, obj client.Object) error {
	raw, err := readManifest(file)
	if err != nil {
		return err
	}
	tmpl, err := template.New(file).Parse(string(raw))
	if err != nil {
		return fmt.Errorf("parsing %s: %w", file, err)
	}
	var out bytes.Buffer
	if err := tmpl.Execute(&out, data); err != nil {
		return fmt.Errorf("rendering %s: %w", file, err)
	}
	if err := yaml.Unmarshal(out.Bytes(), obj); err != nil {
		return fmt.Errorf("parsing rendered %s: %w", file, err)
	}
	return nil
}
