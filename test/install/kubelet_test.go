package install

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/internal/test/testenv"
)

// podTimeout bounds what runDeployment waits for: the Deployment, its
// Secrets, and the readiness of the process.
const podTimeout = 5 * time.Minute

// stopGrace is how long a process started by runDeployment has to exit
// after SIGTERM (the programs' graceful shutdown is 30 s) before SIGKILL.
const stopGrace = 45 * time.Second

// pod is what runDeployment runs: a Deployment's first container, as a
// local process.
type pod struct {
	// Image is the container's image, which no kubelet pulls here.
	Image string
	// Args are the arguments the process runs with.
	Args []string
	// Log is the path of the process's output.
	Log string
}

// runDeployment does what a kubelet does for the Deployment ns/name of
// cluster, as far as the test needs it, and returns once the process is
// ready: it runs the first container's command (its first word mapped to a
// local binary by binaries) with the container's arguments and environment
// ($(VAR) expanded from env, valueFrom read from the ConfigMap, Secret or
// the pod's fields), with each Secret or ConfigMap volume written into a
// directory and every other volume an empty one (the mount paths in the
// arguments replaced by those directories), each container port bound on a
// free loopback port instead, and the pod's ServiceAccount as its
// Kubernetes identity (a token from the TokenRequest API, in the
// kubeconfig $KUBECONFIG names, which the programs read when not in a
// pod). It waits for the readiness probe's HTTP path to answer 200. The
// process runs until env stops, and dies with the test process.
func runDeployment(ctx context.Context, env *testenv.Env, cluster *controlplane.ControlPlane, ns, name string, binaries map[string]string) (*pod, error) {
	dep := &appsv1.Deployment{}
	if err := poll(ctx, func(ctx context.Context) (bool, error) {
		err := cluster.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, dep)
		return err == nil, client.IgnoreNotFound(err)
	}); err != nil {
		return nil, fmt.Errorf("waiting for Deployment %s/%s on %s: %w", ns, name, cluster.Name, err)
	}
	spec := dep.Spec.Template.Spec
	if len(spec.Containers) == 0 || len(spec.Containers[0].Command) == 0 {
		return nil, fmt.Errorf("deployment %s/%s has no container with a command", ns, name)
	}
	c := spec.Containers[0]
	bin, ok := binaries[c.Command[0]]
	if !ok {
		return nil, fmt.Errorf("deployment %s/%s runs %s, which the test has no binary for", ns, name, c.Command[0])
	}
	dir, err := os.MkdirTemp(env.Dir, "pod-"+name+"-")
	if err != nil {
		return nil, err
	}
	podName := name + "-0"
	vars, err := containerEnv(ctx, cluster.Client, ns, podName, c.Env)
	if err != nil {
		return nil, fmt.Errorf("deployment %s/%s: %w", ns, name, err)
	}
	mounts, err := mountVolumes(ctx, cluster.Client, ns, dir, spec.Volumes, c.VolumeMounts)
	if err != nil {
		return nil, fmt.Errorf("deployment %s/%s: %w", ns, name, err)
	}
	ports, err := freePorts(c.Ports)
	if err != nil {
		return nil, err
	}
	args := slices.Concat(c.Command[1:], c.Args)
	for i, arg := range args {
		arg = expand(arg, vars)
		for path, local := range mounts {
			arg = strings.ReplaceAll(arg, path, local)
		}
		for port, local := range ports {
			arg = strings.ReplaceAll(arg, "=:"+strconv.Itoa(int(port)), "=127.0.0.1:"+strconv.Itoa(local))
		}
		args[i] = arg
	}
	kubeconfig := filepath.Join(dir, "serviceaccount.kubeconfig")
	if err := writeTokenKubeconfig(ctx, cluster, ns, spec.ServiceAccountName, kubeconfig); err != nil {
		return nil, fmt.Errorf("deployment %s/%s: %w", ns, name, err)
	}
	// Outside a pod the programs find neither their namespace nor their
	// in-cluster identity; these are what a pod gives them.
	if slices.Contains(args, "--leader-elect") {
		args = append(args, "--leader-election-namespace="+ns)
	}
	owner, err := controlplane.OwnerEnv()
	if err != nil {
		return nil, err
	}
	environ := []string{"KUBECONFIG=" + kubeconfig, "HOME=" + dir, "TMPDIR=" + dir, "PATH=" + os.Getenv("PATH"), owner}
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		environ = append(environ, k+"="+vars[k])
	}
	// Note: in env.Dir/logs, where ocmagents.LogTails finds it.
	p := &pod{Image: c.Image, Args: args, Log: filepath.Join(env.Dir, "logs", "pod-"+name+".log")}
	ready, err := readinessURL(c, ports)
	if err != nil {
		return nil, fmt.Errorf("deployment %s/%s: %w", ns, name, err)
	}
	if err := start(ctx, env, bin, p, environ, ready); err != nil {
		return nil, fmt.Errorf("deployment %s/%s (%s %s): %w", ns, name, bin, strings.Join(args, " "), err)
	}
	return p, nil
}

// start starts bin as p says, until env stops, and waits until ready
// answers 200.
func start(ctx context.Context, env *testenv.Env, bin string, p *pod, environ []string, ready string) error {
	if err := os.MkdirAll(filepath.Dir(p.Log), 0o750); err != nil {
		return err
	}
	logFile, err := os.Create(p.Log)
	if err != nil {
		return err
	}
	defer func() { _ = logFile.Close() }() // the process has its own descriptor
	bctx, goRun := env.Background(ctx)
	cmd := exec.CommandContext(bctx, bin, p.Args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = stopGrace
	cmd.Env = environ
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	goRun(func() {
		_ = cmd.Wait() // the test checks readiness, and the end is SIGTERM's
		close(exited)
	})
	err = poll(ctx, func(ctx context.Context) (bool, error) {
		select {
		case <-exited:
			return false, errors.New("exited")
		default:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, ready, nil)
		if err != nil {
			return false, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, nil //nolint:nilerr // not listening yet
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		out, _ := os.ReadFile(p.Log)
		return fmt.Errorf("not ready at %s: %w; its output:\n%s", ready, err, tail(string(out), 40))
	}
	return nil
}

// containerEnv resolves a container's environment as a kubelet does.
func containerEnv(ctx context.Context, c client.Client, ns, podName string, env []corev1.EnvVar) (map[string]string, error) {
	vars := map[string]string{}
	for _, e := range env {
		switch from := e.ValueFrom; {
		case from == nil:
			vars[e.Name] = expand(e.Value, vars)
		case from.ConfigMapKeyRef != nil:
			cm := &corev1.ConfigMap{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: from.ConfigMapKeyRef.Name}, cm); err != nil {
				return nil, fmt.Errorf("env %s: %w", e.Name, err)
			}
			vars[e.Name] = cm.Data[from.ConfigMapKeyRef.Key]
		case from.SecretKeyRef != nil:
			s := &corev1.Secret{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: from.SecretKeyRef.Name}, s); err != nil {
				return nil, fmt.Errorf("env %s: %w", e.Name, err)
			}
			vars[e.Name] = string(s.Data[from.SecretKeyRef.Key])
		case from.FieldRef != nil && from.FieldRef.FieldPath == "metadata.namespace":
			vars[e.Name] = ns
		case from.FieldRef != nil && from.FieldRef.FieldPath == "metadata.name":
			vars[e.Name] = podName
		default:
			return nil, fmt.Errorf("env %s: a valueFrom the test does not resolve", e.Name)
		}
	}
	return vars, nil
}

// expand replaces each $(VAR) of s whose VAR is in vars, as a kubelet
// expands arguments and values.
func expand(s string, vars map[string]string) string {
	for k, v := range vars {
		s = strings.ReplaceAll(s, "$("+k+")", v)
	}
	return s
}

// mountVolumes makes a directory under dir for each volume a container
// mounts, with the files of a Secret or ConfigMap volume (waiting for the
// Secret: the addon's credential comes after its Deployment), and returns
// the directory of each mount path.
func mountVolumes(ctx context.Context, c client.Client, ns, dir string, volumes []corev1.Volume, mounts []corev1.VolumeMount) (map[string]string, error) {
	local := map[string]string{}
	for _, m := range mounts {
		i := slices.IndexFunc(volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
		if i < 0 {
			return nil, fmt.Errorf("volume mount %s names no volume", m.Name)
		}
		v := volumes[i]
		path := filepath.Join(dir, "volumes", v.Name)
		if err := os.MkdirAll(path, 0o700); err != nil {
			return nil, err
		}
		files := map[string][]byte{}
		switch {
		case v.Secret != nil:
			s := &corev1.Secret{}
			if err := poll(ctx, func(ctx context.Context) (bool, error) {
				err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: v.Secret.SecretName}, s)
				return err == nil, client.IgnoreNotFound(err)
			}); err != nil {
				return nil, fmt.Errorf("waiting for Secret %s/%s: %w", ns, v.Secret.SecretName, err)
			}
			files = s.Data
		case v.ConfigMap != nil:
			cm := &corev1.ConfigMap{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: v.ConfigMap.Name}, cm); err != nil {
				return nil, err
			}
			for k, data := range cm.Data {
				files[k] = []byte(data)
			}
		}
		for name, data := range files {
			if err := os.WriteFile(filepath.Join(path, name), data, 0o600); err != nil {
				return nil, err
			}
		}
		local[m.MountPath] = path
	}
	return local, nil
}

// freePorts picks a free loopback port for each container port.
func freePorts(ports []corev1.ContainerPort) (map[int32]int, error) {
	free := map[int32]int{}
	for _, p := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		free[p.ContainerPort] = l.Addr().(*net.TCPAddr).Port
		if err := l.Close(); err != nil {
			return nil, err
		}
	}
	return free, nil
}

// readinessURL is the URL of c's HTTP readiness probe on its local port.
func readinessURL(c corev1.Container, ports map[int32]int) (string, error) {
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil {
		return "", errors.New("no HTTP readiness probe")
	}
	probe := c.ReadinessProbe.HTTPGet
	port := probe.Port.IntVal
	if probe.Port.StrVal != "" {
		i := slices.IndexFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == probe.Port.StrVal })
		if i < 0 {
			return "", fmt.Errorf("readiness probe port %s is not a container port", probe.Port.StrVal)
		}
		port = c.Ports[i].ContainerPort
	}
	return fmt.Sprintf("http://127.0.0.1:%d%s", ports[port], probe.Path), nil
}

// writeTokenKubeconfig writes a kubeconfig for cluster with a token of the
// ServiceAccount ns/name, as a pod of that ServiceAccount gets one.
func writeTokenKubeconfig(ctx context.Context, cluster *controlplane.ControlPlane, ns, name, path string) error {
	kube, err := kubernetes.NewForConfig(cluster.Config)
	if err != nil {
		return err
	}
	var token string
	err = poll(ctx, func(ctx context.Context) (bool, error) {
		tr, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
		}, metav1.CreateOptions{})
		if err != nil {
			return false, client.IgnoreNotFound(err)
		}
		token = tr.Status.Token
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("a token of ServiceAccount %s/%s: %w", ns, name, err)
	}
	cfg := rest.AnonymousClientConfig(cluster.Config)
	cfg.CAData, cfg.CAFile = cluster.Config.CAData, cluster.Config.CAFile
	cfg.BearerToken = token
	return controlplane.WriteKubeconfig(path, cluster.Name, cfg)
}

// poll calls cond every 200 ms until it is done, fails, or podTimeout
// passes.
func poll(ctx context.Context, cond wait.ConditionWithContextFunc) error {
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, podTimeout, true, cond)
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
