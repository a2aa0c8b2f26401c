package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"time"

	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/canopy-policy/canopy/internal/scheme"
)

// KubernetesVersion is the version of the control-plane binaries, built by
// hack/install-envtest-assets.sh into bin/k8s/<KubernetesVersion>.
const KubernetesVersion = "1.37.1"

// stateDirName is the directory under Env.Dir holding etcd data, certificates
// and wrapper scripts; it is removed on Stop.
const stateDirName = "state"

// clientScheme is shared by every client this package builds.
var clientScheme = sync.OnceValue(scheme.New)

// ControlPlane is one API server: started by this package (etcd and
// kube-apiserver via envtest) or an existing cluster reached by kubeconfig.
type ControlPlane struct {
	// Name is "hub" or the managed cluster's name.
	Name string
	// Config is an administrator's (system:masters) connection.
	Config *rest.Config
	// Client is an administrator's client with internal/scheme's types.
	Client client.Client
	// KubeconfigPath names a kubeconfig file equivalent to Config.
	KubeconfigPath string
	// AuditLogPath names the API server's audit log (see ReadAuditLog),
	// empty unless started with Options.AuditLog.
	AuditLogPath string

	env      *envtest.Environment // nil for an existing cluster
	usersMu  sync.Mutex           // envtest's certificate authority is not safe for concurrent use
	cleanup  string               // removed after stopping; "" when nothing is ours
	stopOnce sync.Once
	stopErr  error
}

// StartControlPlane starts one API server with Canopy's CRDs, OCM's CRDs and
// Canopy's admission policies installed, its state and kubeconfig in a new
// temporary directory that Stop removes.
func StartControlPlane(ctx context.Context, name string) (*ControlPlane, error) {
	sweep()
	dir, err := os.MkdirTemp("", tempDirPattern)
	if err != nil {
		return nil, err
	}
	state := filepath.Join(dir, stateDirName)
	if err := claimStateDir(state); err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	cp, err := startControlPlane(ctx, name, state, filepath.Join(dir, name+".kubeconfig"), false)
	if err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	cp.cleanup = dir
	return cp, nil
}

// startControlPlane starts the control plane name with its state under
// stateDir/name and writes an admin kubeconfig to kubeconfigPath; audit
// turns on the API server's audit log.
func startControlPlane(ctx context.Context, name, stateDir, kubeconfigPath string, audit bool) (*ControlPlane, error) {
	dir := filepath.Join(stateDir, name)
	for _, sub := range []string{"bin", "certs", "etcd"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			return nil, err
		}
	}
	paths := map[string]string{}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		real, err := binaryPath(bin)
		if err != nil {
			return nil, err
		}
		if paths[bin], err = wrapBinary(filepath.Join(dir, "bin"), bin, real); err != nil {
			return nil, fmt.Errorf("wrapping %s: %w", bin, err)
		}
	}
	objs, err := loadManifests()
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		ControlPlane: envtest.ControlPlane{
			APIServer: &envtest.APIServer{Path: paths["kube-apiserver"], CertDir: filepath.Join(dir, "certs")},
			Etcd:      &envtest.Etcd{Path: paths["etcd"], DataDir: filepath.Join(dir, "etcd")},
		},
		Scheme:                   clientScheme(),
		CRDs:                     objs.crds,
		CRDInstallOptions:        envtest.CRDInstallOptions{PollInterval: 50 * time.Millisecond, MaxTime: time.Minute},
		UseExistingCluster:       ptr.To(false),
		ControlPlaneStartTimeout: startTimeout(),
		ControlPlaneStopTimeout:  20 * time.Second,
	}
	cp := &ControlPlane{Name: name, KubeconfigPath: kubeconfigPath, env: env, cleanup: dir}
	if audit {
		if cp.AuditLogPath, err = enableAudit(env, dir); err != nil {
			return nil, err
		}
	}
	track(cp, cp.Stop)
	if err := cp.start(ctx, objs); err != nil {
		return nil, errors.Join(fmt.Errorf("starting control plane %s: %w", name, err), cp.Stop())
	}
	return cp, nil
}

func (c *ControlPlane) start(ctx context.Context, objs *manifests) error {
	cfg, err := c.env.Start() // Note: envtest takes no context; ctx is checked after.
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	c.Config = cfg
	if c.Client, err = client.New(cfg, client.Options{Scheme: clientScheme()}); err != nil {
		return err
	}
	if err := createAll(ctx, c.Client, objs.admission); err != nil {
		return fmt.Errorf("installing admission policies: %w", err)
	}
	return writeKubeconfig(c.KubeconfigPath, c.Name, cfg)
}

// Stop stops the control plane started by this package and removes its
// state; for an existing cluster it does nothing. It is safe to call twice.
func (c *ControlPlane) Stop() error {
	c.stopOnce.Do(func() {
		untrack(c)
		var errs []error
		if c.env != nil {
			errs = append(errs, c.env.Stop())
		}
		if c.cleanup != "" {
			errs = append(errs, os.RemoveAll(c.cleanup))
		}
		c.stopErr = kerrors.NewAggregate(errs)
	})
	return c.stopErr
}

// AddUser returns a connection as user, member of groups, authenticated by a
// client certificate. Authorization is left to the caller (RBAC). Only
// control planes started by this package can issue certificates.
func (c *ControlPlane) AddUser(user string, groups ...string) (*rest.Config, error) {
	if c.env == nil {
		return nil, fmt.Errorf("control plane %s is an existing cluster: cannot issue client certificates", c.Name)
	}
	c.usersMu.Lock()
	u, err := c.env.AddUser(envtest.User{Name: user, Groups: groups}, &rest.Config{QPS: 1000, Burst: 2000})
	c.usersMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("adding user %s to %s: %w", user, c.Name, err)
	}
	return u.Config(), nil
}

// binaryPath finds a control-plane binary as envtest would, with this
// repository's bin/k8s/<KubernetesVersion> as the default directory:
// TEST_ASSET_KUBE_APISERVER / TEST_ASSET_ETCD, then KUBEBUILDER_ASSETS.
func binaryPath(name string) (string, error) {
	path := os.Getenv("TEST_ASSET_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_")))
	if path == "" {
		dir := os.Getenv("KUBEBUILDER_ASSETS")
		if dir == "" {
			root, err := RepoRoot()
			if err != nil {
				return "", err
			}
			dir = filepath.Join(root, "bin", "k8s", KubernetesVersion)
		}
		path = filepath.Join(dir, name)
	}
	if info, err := os.Stat(path); err != nil || info.Mode()&0o111 == 0 {
		return "", fmt.Errorf("control-plane binary %s not found at %s: run hack/install-envtest-assets.sh or set KUBEBUILDER_ASSETS", name, path)
	}
	return filepath.Abs(path)
}

// RepoRoot returns the directory of this module's go.mod: found from this
// source file's path, or from the working directory when built with -trimpath.
func RepoRoot() (string, error) {
	var starts []string
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		starts = append(starts, filepath.Dir(file))
	}
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	for _, dir := range starts {
		for {
			if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && modulePattern.Match(data) {
				return dir, nil
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return "", errors.New("finding the repository root: no go.mod of github.com/canopy-policy/canopy above this source file or the working directory")
}

var modulePattern = regexp.MustCompile(`(?m)^module\s+github\.com/canopy-policy/canopy\s*$`)

// startTimeout bounds the start of each of etcd and kube-apiserver. Several
// control planes start at once on small machines, so the default is more
// generous than envtest's 20 s.
func startTimeout() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT")); err == nil {
		return d
	}
	return time.Minute
}

// sweep removes what earlier processes that died without stopping their
// control planes left behind.
func sweep() {
	sweepOrphans()
	sweepTempDirs()
}
