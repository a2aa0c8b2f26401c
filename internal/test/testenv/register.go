package testenv

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/pkg/hubrbac"
)

// agentTokenTTL is the lifetime asked of ServiceAccount tokens (FromKubeconfigs).
const agentTokenTTL = 24 * time.Hour

// RegisterCluster registers the managed cluster name on the hub the way OCM
// registration and the Canopy addon would, and returns its agent's hub
// connection (also written to Dir/<name>-hub.kubeconfig):
//
//   - the cluster namespace name;
//   - the ManagedCluster name, accepted (hubAcceptsClient) and Available;
//   - an agent identity: with control planes started by Start, a client
//     certificate for hubrbac.User(name) in hubrbac.Groups(name), as OCM's
//     CSR flow issues; with FromKubeconfigs, a ServiceAccount token;
//   - hubrbac's Role and RoleBinding in the cluster namespace only.
//
// It returns once the agent's permissions are in effect. It is idempotent, and
// needs no API server for the cluster: tests of the hub can register clusters
// that exist only as names.
func (e *Env) RegisterCluster(ctx context.Context, name string) (*rest.Config, error) {
	mc, err := e.register(ctx, name)
	if err != nil {
		return nil, err
	}
	return mc.HubConfig, nil
}

func (e *Env) register(ctx context.Context, name string) (*ManagedCluster, error) {
	if err := validateNames([]string{name}); err != nil {
		return nil, err
	}
	c := e.Hub.Client
	if err := ensureNamespace(ctx, c, name); err != nil {
		return nil, err
	}
	if err := ensureManagedCluster(ctx, c, name); err != nil {
		return nil, err
	}
	cfg, subject, err := e.identity(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("issuing the agent identity of %s: %w", name, err)
	}
	if err := ensureAgentRBAC(ctx, c, name, subject); err != nil {
		return nil, err
	}
	hubClient, err := client.New(cfg, client.Options{Scheme: controlplane.Scheme()})
	if err != nil {
		return nil, err
	}
	if err := WaitForAccess(ctx, hubClient, name, &policyv1.PolicyList{}); err != nil {
		return nil, fmt.Errorf("waiting for the agent RBAC of %s: %w", name, err)
	}
	path := filepath.Join(e.Dir, name+"-hub.kubeconfig")
	if err := controlplane.WriteKubeconfig(path, name+"-agent", cfg); err != nil {
		return nil, err
	}
	return &ManagedCluster{HubConfig: cfg, HubClient: hubClient, HubKubeconfigPath: path}, nil
}

// certificateIdentity issues the agent of cluster a client certificate with
// the user and groups OCM's addon registration gives it.
func (e *Env) certificateIdentity(_ context.Context, cluster string) (*rest.Config, rbacv1.Subject, error) {
	cfg, err := e.Hub.AddUser(hubrbac.User(cluster), hubrbac.Groups(cluster)...)
	return cfg, hubrbac.GroupSubject(cluster), err
}

// serviceAccountIdentity gives the agent of cluster a ServiceAccount in the
// cluster namespace and a token for it.
func (e *Env) serviceAccountIdentity(ctx context.Context, cluster string) (*rest.Config, rbacv1.Subject, error) {
	c := e.Hub.Client
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: hubrbac.AgentName, Namespace: cluster}}
	if _, err := controllerutil.CreateOrUpdate(ctx, c, sa, func() error {
		sa.Labels = mergeLabels(sa.Labels, hubrbac.Labels)
		return nil
	}); err != nil {
		return nil, rbacv1.Subject{}, fmt.Errorf("writing service account: %w", err)
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To(int64(agentTokenTTL.Seconds())),
	}}
	if err := c.SubResource("token").Create(ctx, sa, tr); err != nil {
		return nil, rbacv1.Subject{}, fmt.Errorf("requesting a token: %w", err)
	}
	cfg := rest.AnonymousClientConfig(e.Hub.Config)
	cfg.BearerToken = tr.Status.Token
	return cfg, hubrbac.ServiceAccountSubject(cluster, hubrbac.AgentName), nil
}

func ensureNamespace(ctx context.Context, c client.Client, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

// ensureManagedCluster writes the ManagedCluster as the registration
// controller and agent would once the cluster joined: accepted, joined and
// available.
func ensureManagedCluster(ctx context.Context, c client.Client, name string) error {
	mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := controllerutil.CreateOrUpdate(ctx, c, mc, func() error {
		mc.Labels = mergeLabels(mc.Labels, map[string]string{
			"name":                        name,
			clusterv1.ClusterNameLabelKey: name,
			"cluster.open-cluster-management.io/clusterset": "default",
		})
		mc.Spec.HubAcceptsClient = true
		return nil
	}); err != nil {
		return fmt.Errorf("writing managed cluster %s: %w", name, err)
	}
	orig := mc.DeepCopy()
	for _, cond := range []metav1.Condition{
		{Type: clusterv1.ManagedClusterConditionHubAccepted, Reason: "HubClusterAdminAccepted", Message: "Accepted by internal/test/testenv."},
		{Type: clusterv1.ManagedClusterConditionJoined, Reason: "ManagedClusterJoined", Message: "Registered by internal/test/testenv."},
		{Type: clusterv1.ManagedClusterConditionAvailable, Reason: "ManagedClusterAvailable", Message: "Registered by internal/test/testenv."},
	} {
		cond.Status = metav1.ConditionTrue
		meta.SetStatusCondition(&mc.Status.Conditions, cond)
	}
	if mc.Status.Version.Kubernetes == "" {
		mc.Status.Version.Kubernetes = "v" + controlplane.KubernetesVersion
	}
	// Note: with the version read as precondition; a conflict fails this
	// attempt, and Start registers the cluster again (it is idempotent).
	if err := c.Status().Patch(ctx, mc, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("writing the status of managed cluster %s: %w", name, err)
	}
	return nil
}

func ensureAgentRBAC(ctx context.Context, c client.Client, namespace string, subject rbacv1.Subject) error {
	want := hubrbac.Role(namespace)
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: want.Name, Namespace: namespace}}
	if _, err := controllerutil.CreateOrUpdate(ctx, c, role, func() error {
		role.Labels = mergeLabels(role.Labels, want.Labels)
		role.Rules = want.Rules
		return nil
	}); err != nil {
		return fmt.Errorf("writing role %s/%s: %w", namespace, want.Name, err)
	}
	wantRB := hubrbac.RoleBinding(namespace, subject)
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: wantRB.Name, Namespace: namespace}}
	if _, err := controllerutil.CreateOrUpdate(ctx, c, rb, func() error {
		if rb.CreationTimestamp.IsZero() {
			rb.RoleRef = wantRB.RoleRef // immutable
		}
		rb.Labels = mergeLabels(rb.Labels, wantRB.Labels)
		rb.Subjects = wantRB.Subjects
		return nil
	}); err != nil {
		return fmt.Errorf("writing role binding %s/%s: %w", namespace, wantRB.Name, err)
	}
	return nil
}

// WaitForAccess waits until c may list the objects of list's kind in
// namespace, so that callers never see a transient Forbidden while the RBAC
// authorizer's caches catch up with a new Role, binding or identity. Any
// other error is retried too until the wait ends (a busy or just started
// API server answers some requests with one), and the last one is returned.
func WaitForAccess(ctx context.Context, c client.Client, namespace string, list client.ObjectList) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		last = c.List(ctx, list, client.InNamespace(namespace), client.Limit(1))
		return last == nil, nil
	})
	if err != nil && last != nil {
		return fmt.Errorf("%w (the last answer: %w)", err, last)
	}
	return err
}

func mergeLabels(into, from map[string]string) map[string]string {
	if into == nil {
		into = make(map[string]string, len(from))
	}
	maps.Copy(into, from)
	return into
}

// ClusterClaimID is the ClusterClaim that OCM's registration agent creates
// on every managed cluster; its value is the cluster's unique id. Control
// planes started by Start carry it with the cluster's name as its value, so
// that policies using fromClusterClaim resolve as on a registered cluster.
const ClusterClaimID = "id.k8s.io"

// ensureClusterClaims creates the ClusterClaims a registered managed cluster
// carries (ClusterClaimID), leaving existing ones as they are.
func ensureClusterClaims(ctx context.Context, c client.Client, name string) error {
	claim := &unstructured.Unstructured{}
	claim.SetAPIVersion("cluster.open-cluster-management.io/v1alpha1")
	claim.SetKind("ClusterClaim")
	claim.SetName(ClusterClaimID)
	claim.SetLabels(map[string]string{"open-cluster-management.io/hub-managed": ""})
	if err := unstructured.SetNestedField(claim.Object, name, "spec", "value"); err != nil {
		return err
	}
	if err := c.Create(ctx, claim); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ClusterClaim %s on %s: %w", ClusterClaimID, name, err)
	}
	return nil
}
