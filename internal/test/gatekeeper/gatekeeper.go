package gatekeeper

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/canopy-policy/canopy/internal/test/controlplane"
)

// Version is the Gatekeeper release this package runs.
const Version = "3.20.1"

// AssetsEnv names the environment variable that overrides the directory of
// Gatekeeper's manager and its crds/; the default is
// bin/gatekeeper/<Version> in this repository.
const AssetsEnv = "GATEKEEPER_ASSETS"

// Namespace is where Gatekeeper runs: its pod status objects live there.
const Namespace = "gatekeeper-system"

// stopGrace is how long Gatekeeper has to stop after SIGTERM before it
// gets SIGKILL.
const stopGrace = 5 * time.Second

// assetsDir returns the directory of Gatekeeper's manager and CRDs.
func assetsDir() (string, error) {
	dir := os.Getenv(AssetsEnv)
	if dir == "" {
		root, err := controlplane.RepoRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, "bin", "gatekeeper", Version)
	}
	return filepath.Abs(dir)
}

// ManagerPath returns the path of Gatekeeper's manager, which must be
// there.
func ManagerPath() (string, error) {
	dir, err := assetsDir()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "manager")
	if info, err := os.Stat(path); err != nil || info.Mode()&0o111 == 0 {
		return "", fmt.Errorf("gatekeeper's manager not found at %s: run make gatekeeper-assets or set %s", path, AssetsEnv)
	}
	return path, nil
}

// InstallCRDs installs Gatekeeper's CRDs on the API server c reaches and
// waits until they are served.
func InstallCRDs(ctx context.Context, c client.Client) error {
	dir, err := assetsDir()
	if err != nil {
		return err
	}
	objs, err := controlplane.ReadObjects(filepath.Join(dir, "crds"))
	if err != nil {
		return fmt.Errorf("reading Gatekeeper's CRDs: %w (run make gatekeeper-assets or set %s)", err, AssetsEnv)
	}
	if err := controlplane.Apply(ctx, c, objs...); err != nil {
		return fmt.Errorf("installing Gatekeeper's CRDs: %w", err)
	}
	for _, o := range objs {
		if err := waitEstablished(ctx, c, o.GetName()); err != nil {
			return err
		}
	}
	return nil
}

func waitEstablished(ctx context.Context, c client.Client, name string) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

// Options are how Start runs Gatekeeper.
type Options struct {
	// AuditInterval is the time between audits, in whole seconds; zero
	// means one second.
	AuditInterval time.Duration
	// Pod is the name Gatekeeper gives itself (POD_NAME); empty means
	// "gatekeeper-audit".
	Pod string
}

// Gatekeeper is a running Gatekeeper manager.
type Gatekeeper struct {
	// Pod is its pod name, the id of its entries in status.byPod.
	Pod string
	// LogPath is its log.
	LogPath string

	stop   context.CancelFunc
	exited chan struct{}
	err    error // how it exited, once exited is closed
}

// Start runs Gatekeeper on cp as Run does, in t's temporary directory,
// until t ends; the test fails then if it stopped on its own, and shows
// the end of its log if it failed.
func Start(t testing.TB, cp *controlplane.ControlPlane, opts Options) *Gatekeeper {
	t.Helper()
	gk, err := Run(t.Context(), cp, t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := gk.Stop(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("end of Gatekeeper's log %s:\n%s", gk.LogPath, logTail(gk.LogPath))
		}
	})
	return gk
}

// Run installs Gatekeeper's CRDs on cp, and runs its manager audit-only
// (--operation=audit --operation=status --operation=generate) against it, with its log and
// files in dir, until Stop. It dies with the test process too: the kernel
// kills it (tieToTest) and, failing that, internal/test/controlplane's
// Sweep finds it by its owner mark.
func Run(ctx context.Context, cp *controlplane.ControlPlane, dir string, opts Options) (*Gatekeeper, error) {
	gk := &Gatekeeper{Pod: opts.Pod, exited: make(chan struct{})}
	if gk.Pod == "" {
		gk.Pod = "gatekeeper-audit"
	}
	if err := InstallCRDs(ctx, cp.Client); err != nil {
		return nil, err
	}
	if err := createPod(ctx, cp.Client, gk.Pod); err != nil {
		return nil, err
	}
	bin, err := ManagerPath()
	if err != nil {
		return nil, err
	}
	owner, err := controlplane.OwnerEnv()
	if err != nil {
		return nil, err
	}
	cacheDir := filepath.Join(dir, "audit") // the audit empties it, and fails when it is missing
	if err := os.MkdirAll(cacheDir, 0o700); err != nil {
		return nil, err
	}
	gk.LogPath = filepath.Join(dir, "gatekeeper.log")
	log, err := os.Create(gk.LogPath)
	if err != nil {
		return nil, err
	}
	defer func() { _ = log.Close() }() // the process has its own descriptor
	interval := max(int64(opts.AuditInterval/time.Second), 1)
	pctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	cmd := exec.CommandContext(pctx, bin,
		"--operation=audit", "--operation=status", "--operation=generate",
		"--audit-interval="+strconv.FormatInt(interval, 10),
		"--disable-cert-rotation", "--health-addr=0", "--metrics-addr=0",
		"--prometheus-port=0", "--api-cache-dir="+cacheDir,
		"--disable-opa-builtin={http.send}", "--enable-external-data=false",
		// No ValidatingAdmissionPolicies: the constraints here are Rego, and
		// without the API Gatekeeper retries the binding of every constraint
		// in a hot loop.
		"--default-create-vap-for-templates=false", "--default-create-vap-binding-for-constraints=false",
		"--log-level=INFO")
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = stopGrace
	cmd.Env = slices.Concat(os.Environ(), []string{owner, "KUBECONFIG=" + cp.KubeconfigPath,
		"POD_NAME=" + gk.Pod, "POD_NAMESPACE=" + Namespace, "CONTAINER_NAME=manager", "TMPDIR=" + dir})
	cmd.Stdout, cmd.Stderr = log, log
	tieToTest(cmd)
	if err := cmd.Start(); err != nil {
		stop()
		return nil, fmt.Errorf("starting Gatekeeper: %w", err)
	}
	gk.stop = stop
	go func() {
		gk.err = cmd.Wait()
		close(gk.exited)
	}()
	return gk, nil
}

// Stop stops Gatekeeper and waits for it to exit. It fails when Gatekeeper
// had stopped on its own before, with the end of its log.
func (gk *Gatekeeper) Stop() error {
	select {
	case <-gk.exited:
		gk.stop()
		return fmt.Errorf("gatekeeper stopped on its own (%w); end of %s:\n%s", gk.err, gk.LogPath, logTail(gk.LogPath))
	default:
	}
	gk.stop()
	<-gk.exited
	return nil
}

// createPod creates Gatekeeper's namespace and the Pod object it reads as
// its own, which owns its pod status objects. Nothing runs it.
func createPod(ctx context.Context, c client.Client, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", Namespace, err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name, Labels: map[string]string{"control-plane": "audit-controller"}},
		Spec: corev1.PodSpec{
			// Never scheduled, where a cluster has nodes (kind): the process
			// of the test is this pod.
			NodeSelector:                 map[string]string{"canopy.io/never": "scheduled"},
			AutomountServiceAccountToken: ptr.To(false),
			Containers:                   []corev1.Container{{Name: "manager", Image: "openpolicyagent/gatekeeper:v" + Version}},
		},
	}
	if err := c.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating pod %s/%s: %w", Namespace, name, err)
	}
	return nil
}

// logTail returns the last lines of the log at path.
func logTail(path string) string {
	const maxLines, maxBytes = 60, 32768
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	data = bytes.TrimRight(data, "\n")
	if len(data) > maxBytes {
		data = data[len(data)-maxBytes:]
	}
	lines := bytes.Split(data, []byte("\n"))
	if len(lines) > maxLines {
		lines = lines[len(lines)-maxLines:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
