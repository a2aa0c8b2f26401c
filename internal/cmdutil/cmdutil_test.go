package cmdutil

import (
	"context"
	"errors"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// TestServingOptionsFlags checks the flags BindFlags registers, their
// defaults, and that Apply copies them into manager options.
func TestServingOptionsFlags(t *testing.T) {
	g := NewWithT(t)
	var o ServingOptions
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	zapOpts := o.BindFlags(fs, ":8080", ":8081")
	g.Expect(fs.Parse(nil)).To(Succeed())
	g.Expect(o).To(Equal(ServingOptions{MetricsAddress: ":8080", HealthAddress: ":8081", ShutdownTimeout: 30 * time.Second}))
	g.Expect(zapOpts.Development).To(BeFalse())

	g.Expect(fs.Parse([]string{"--metrics-bind-address=0", "--health-probe-bind-address=:9", "--graceful-shutdown-timeout=5s",
		"--pprof-bind-address=127.0.0.1:6060", "--zap-devel"})).To(Succeed())
	g.Expect(o).To(Equal(ServingOptions{MetricsAddress: "0", HealthAddress: ":9", ShutdownTimeout: 5 * time.Second,
		PprofAddress: "127.0.0.1:6060"}))
	g.Expect(zapOpts.Development).To(BeTrue(), "the zap flags are bound to the options returned")

	var opts manager.Options
	o.Apply(&opts)
	g.Expect(opts.Metrics).To(Equal(metricsserver.Options{BindAddress: "0"}))
	g.Expect(opts.HealthProbeBindAddress).To(Equal(":9"))
	g.Expect(opts.PprofBindAddress).To(Equal("127.0.0.1:6060"))
	g.Expect(opts.GracefulShutdownTimeout).To(HaveValue(Equal(5 * time.Second)))
	o.ShutdownTimeout = time.Hour
	g.Expect(opts.GracefulShutdownTimeout).To(HaveValue(Equal(5*time.Second)), "Apply copies the timeout")
}

const kubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://hub.example:6443"}
users:
- name: u
  user: {token: t0ken}
contexts:
- name: ctx
  context: {cluster: c, user: u}
current-context: ctx
`

// TestRESTConfig checks that the configuration comes from the path given,
// or from $KUBECONFIG without one, and never rate-limits on the client.
func TestRESTConfig(t *testing.T) {
	g := NewWithT(t)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(os.WriteFile(path, []byte(kubeconfig), 0o600)).To(Succeed())

	cfg, err := RESTConfig(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.Host).To(Equal("https://hub.example:6443"))
	g.Expect(cfg.BearerToken).To(Equal("t0ken"))
	g.Expect(cfg.QPS).To(BeNumerically("==", -1), "no client-side rate limit")

	missing := filepath.Join(t.TempDir(), "missing")
	_, err = RESTConfig(missing)
	g.Expect(err).To(MatchError(HavePrefix("loading kubeconfig " + missing + ": ")))

	t.Setenv("KUBECONFIG", path)
	cfg, err = RESTConfig("")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.Host).To(Equal("https://hub.example:6443"))
	g.Expect(cfg.QPS).To(BeNumerically("==", -1))
}

// probeManager records the checks AddProbes registers.
type probeManager struct {
	manager.Manager
	healthz, readyz map[string]healthz.Checker
	readyzErr       error
}

func (m *probeManager) AddHealthzCheck(name string, check healthz.Checker) error {
	m.healthz[name] = check
	return nil
}

func (m *probeManager) AddReadyzCheck(name string, check healthz.Checker) error {
	m.readyz[name] = check
	return m.readyzErr
}

// syncedCache is a cache that has synced, or never will.
type syncedCache struct {
	cache.Cache
	synced bool
}

func (c syncedCache) WaitForCacheSync(ctx context.Context) bool {
	if !c.synced {
		<-ctx.Done()
	}
	return c.synced
}

// TestAddProbes checks that /healthz pings and /readyz has one check per
// cache, ready once that cache has synced.
func TestAddProbes(t *testing.T) {
	g := NewWithT(t)
	m := &probeManager{healthz: map[string]healthz.Checker{}, readyz: map[string]healthz.Checker{}}
	g.Expect(AddProbes(m, map[string]cache.Cache{"hub": syncedCache{synced: true}, "managed": syncedCache{}})).To(Succeed())
	g.Expect(m.healthz).To(HaveKey("ping"))
	g.Expect(m.readyz).To(HaveLen(2))
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "/readyz", nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(m.healthz["ping"](req)).To(Succeed())
	g.Expect(m.readyz["hub-cache"](req)).To(Succeed())
	g.Expect(m.readyz["managed-cache"](req)).To(MatchError("cache has not synced yet"))

	m.readyzErr = errors.New("taken")
	g.Expect(AddProbes(m, map[string]cache.Cache{"hub": syncedCache{}})).To(MatchError("adding readiness check hub: taken"))
}

// TestCacheSyncedWaitsAtMostASecond checks that a probe of a cache that
// has not synced answers within about a second, not the request's time.
func TestCacheSyncedWaitsAtMostASecond(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "/readyz", nil)
	g.Expect(err).NotTo(HaveOccurred())
	start := time.Now()
	g.Expect(cacheSynced(syncedCache{})(req)).To(HaveOccurred())
	g.Expect(time.Since(start)).To(BeNumerically(">=", time.Second))
	g.Expect(time.Since(start)).To(BeNumerically("<", 10*time.Second))
}
