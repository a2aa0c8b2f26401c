package controlplane

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

// StateDirName is the directory, under the directory of a control plane's
// kubeconfig, holding the state of the control planes started there (etcd
// data, certificates, wrapper scripts); it is removed on Stop.
const StateDirName = "state"

// Scheme returns the scheme of every client this package builds:
// internal/scheme's, built once and shared.
var Scheme = sync.OnceValue(scheme.New)

// ControlPlane is one API server: started by this package (etcd and
// kube-apiserver via envtest) or an existing cluster reached by kubeconfig
// (see Connect).
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
	usersMu  sync.Mutex           // envtest's AddUser is not safe for concurrent use
	cleanup  string               // removed after stopping; "" when nothing is ours
	stopOnce sync.Once
	stopErr  error
}

// Options places a control plane's state for a caller that keeps several
// control planes in one directory of its own (internal/test/testenv's Env).
type Options struct {
	// StateDir is a directory the caller claimed with ClaimStateDir; the
	// control plane keeps its etcd data, certificates and wrapper scripts in
	// StateDir/<name>, which Stop removes.
	StateDir string
	// KubeconfigPath receives an administrator's kubeconfig; Stop leaves it.
	KubeconfigPath string
	// AuditLog makes the API server log every write, with the deleted
	// object for deletions (see ReadAuditLog).
	AuditLog bool
}

// Start starts one API server with Canopy's CRDs, OCM's CRDs and Canopy's
// admission policies installed, its state and kubeconfig in a new temporary
// directory that Stop removes.
func Start(ctx context.Context, name string) (*ControlPlane, error) {
	Sweep()
	dir, err := TempDir()
	if err != nil {
		return nil, err
	}
	state := filepath.Join(dir, StateDirName)
	if err := ClaimStateDir(state); err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	cp, err := StartIn(ctx, name, Options{StateDir: state, KubeconfigPath: filepath.Join(dir, name+".kubeconfig")})
	if err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	cp.cleanup = dir
	return cp, nil
}

// StartIn starts the control plane name as Start does, with its state and
// kubeconfig where opts says. On error nothing is left running.
func StartIn(ctx context.Context, name string, opts Options) (*ControlPlane, error) {
	dir := filepath.Join(opts.StateDir, name)
	objs, err := loadManifests()
	if err != nil {
		return nil, err
	}
	var cp *ControlPlane
	err = Retry(ctx, startAttempts, 0, func(err error) bool {
		if !errors.Is(err, errStartFailed) {
			return false
		}
		fmt.Fprintf(os.Stderr, "controlplane: starting %s: %v\nstarting it afresh\n", name, err)
		return true
	}, func() (err error) {
		cp, err = startAttempt(ctx, name, dir, opts, objs)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("starting control plane %s: %w", name, err)
	}
	return cp, nil
}

// startAttempts bounds the starts of a control plane whose processes fail
// to start. envtest picks their ports by listening on a free one and closing
// it, so under load another process can take a port before etcd or
// kube-apiserver binds it (and envtest's own retries reuse the ports): a new
// attempt starts afresh, with new ports and empty state.
const startAttempts = 3

// errStartFailed marks a start that failed once etcd and kube-apiserver
// were launched, which a new attempt may not repeat.
var errStartFailed = errors.New("control plane failed to start")

// startAttempt starts the control plane name once, in dir, cleared first.
// On error it stops what it started, and an error of the start itself
// (errStartFailed) carries the end of etcd's and kube-apiserver's output.
func startAttempt(ctx context.Context, name, dir string, opts Options, objs *manifests) (*ControlPlane, error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	for _, sub := range []string{"bin", "certs", "etcd"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			return nil, err
		}
	}
	env, err := newEnvironment(dir)
	if err != nil {
		return nil, err
	}
	output := &tailBuffer{max: 4 << 10}
	env.ControlPlane.Etcd.Out, env.ControlPlane.Etcd.Err = output, output
	env.ControlPlane.APIServer.Out, env.ControlPlane.APIServer.Err = output, output
	env.CRDs = objs.crds
	cp := &ControlPlane{Name: name, KubeconfigPath: opts.KubeconfigPath, env: env, cleanup: dir}
	if opts.AuditLog {
		if cp.AuditLogPath, err = enableAudit(env, dir); err != nil {
			return nil, err
		}
	}
	Track(cp, cp.Stop)
	if err := cp.start(ctx, objs); err != nil {
		err = fmt.Errorf("%w: %w; the end of etcd's and kube-apiserver's output:\n%s", errStartFailed, err, output)
		return nil, errors.Join(err, cp.Stop())
	}
	return cp, nil
}

// newEnvironment returns envtest's description of a control plane whose
// state lives in dir, launching etcd and kube-apiserver through wrappers
// that tie them to this process (see wrapBinary).
func newEnvironment(dir string) (*envtest.Environment, error) {
	paths := map[string]string{}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		real, err := BinaryPath(bin)
		if err != nil {
			return nil, err
		}
		if paths[bin], err = wrapBinary(filepath.Join(dir, "bin"), bin, real); err != nil {
			return nil, fmt.Errorf("wrapping %s: %w", bin, err)
		}
	}
	ca, err := newClientCA()
	if err != nil {
		return nil, err
	}
	return &envtest.Environment{
		ControlPlane: envtest.ControlPlane{
			APIServer: &envtest.APIServer{
				Path: paths["kube-apiserver"], CertDir: filepath.Join(dir, "certs"),
				SecureServing: envtest.SecureServing{Authn: ca},
			},
			Etcd: &envtest.Etcd{Path: paths["etcd"], DataDir: filepath.Join(dir, "etcd")},
		},
		Scheme:                   Scheme(),
		CRDInstallOptions:        envtest.CRDInstallOptions{PollInterval: 50 * time.Millisecond, MaxTime: time.Minute},
		UseExistingCluster:       ptr.To(false),
		ControlPlaneStartTimeout: startTimeout(),
		// Note: kube-apiserver's graceful stop waits while a client keeps a
		// watch open: a stop that times out (a suite reports it as a
		// failure) means something the tests started still watches, as a
		// hub template watcher stopped mid-batch once did.
		ControlPlaneStopTimeout: time.Minute,
	}, nil
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
	if c.Client, err = client.New(cfg, client.Options{Scheme: Scheme()}); err != nil {
		return err
	}
	warmCRDStorage(ctx, cfg, c.env.CRDs)
	if err := CreateAll(ctx, c.Client, objs.admission); err != nil {
		return fmt.Errorf("installing admission policies: %w", err)
	}
	return WriteKubeconfig(c.KubeconfigPath, c.Name, cfg)
}

// Stop stops the control plane started by this package and removes its
// state; for an existing cluster it does nothing. It is safe to call twice.
func (c *ControlPlane) Stop() error {
	c.stopOnce.Do(func() {
		Untrack(c)
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

// ClientCA returns the paths of the certificate and private key of the
// certificate authority that signs the control plane's client certificates
// (AddUser's, and those kube-controller-manager issues for approved
// CertificateSigningRequests). Only control planes started by this package
// have them.
func (c *ControlPlane) ClientCA() (certFile, keyFile string, err error) {
	if c.env == nil {
		return "", "", fmt.Errorf("control plane %s is an existing cluster: its client CA is not ours", c.Name)
	}
	dir := c.env.ControlPlane.APIServer.CertDir
	return filepath.Join(dir, clientCACertFile), filepath.Join(dir, clientCAKeyFile), nil
}

// BinaryPath finds a Kubernetes binary (kube-apiserver, etcd,
// kube-controller-manager) as envtest would, with this
// repository's bin/k8s/<KubernetesVersion> as the default directory:
// TEST_ASSET_KUBE_APISERVER / TEST_ASSET_ETCD, then KUBEBUILDER_ASSETS.
func BinaryPath(name string) (string, error) {
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

// Sweep removes what earlier processes that died without stopping their
// control planes left behind: their etcd and kube-apiserver processes and
// their temporary directories. Start calls it.
func Sweep() {
	sweepOrphans()
	sweepTempDirs()
}

// tailBuffer keeps the last max bytes written to it; it is safe for
// concurrent use (etcd and kube-apiserver write to one).
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
