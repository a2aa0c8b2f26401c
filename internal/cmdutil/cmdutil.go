// Package cmdutil holds what Canopy's binaries share: the flags every
// controller process has (logging, metrics, health probes) and the wiring of
// those flags into a controller-runtime manager.
package cmdutil

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// ServingOptions are the endpoints every Canopy process serves.
type ServingOptions struct {
	// MetricsAddress is where Prometheus metrics are served; "0" disables them.
	MetricsAddress string
	// HealthAddress is where /healthz and /readyz are served; "0" disables them.
	HealthAddress string
	// ShutdownTimeout bounds how long running reconciles get to finish on SIGTERM.
	ShutdownTimeout time.Duration
	// PprofAddress is where net/http/pprof is served; "" or "0" disables it.
	PprofAddress string
}

// BindFlags registers the serving and logging flags on fs. The returned zap
// options must be turned into a logger with SetupLogger after fs is parsed.
func (o *ServingOptions) BindFlags(fs *flag.FlagSet, defaultMetrics, defaultHealth string) *zap.Options {
	fs.StringVar(&o.MetricsAddress, "metrics-bind-address", defaultMetrics,
		"Address the Prometheus metrics endpoint binds to; 0 disables it.")
	fs.StringVar(&o.HealthAddress, "health-probe-bind-address", defaultHealth,
		"Address the /healthz and /readyz endpoints bind to; 0 disables them.")
	fs.DurationVar(&o.ShutdownTimeout, "graceful-shutdown-timeout", 30*time.Second,
		"How long in-flight reconciles get to finish after SIGTERM.")
	fs.StringVar(&o.PprofAddress, "pprof-bind-address", "",
		"Address the net/http/pprof endpoints bind to (profiling, e.g. by make bench); empty or 0 disables them.")
	zapOpts := &zap.Options{}
	zapOpts.BindFlags(fs)
	return zapOpts
}

// SetupLogger installs the structured logger the flags describe as the
// controller-runtime and klog default, without client-go's body dumps (see
// RedactBodies).
func SetupLogger(zapOpts *zap.Options) {
	logger := RedactBodies(zap.New(zap.UseFlagOptions(zapOpts)))
	ctrl.SetLogger(logger)
	klog.SetLogger(logger)
}

// Apply copies the serving options into manager options.
func (o *ServingOptions) Apply(opts *manager.Options) {
	opts.Metrics = metricsserver.Options{BindAddress: o.MetricsAddress}
	opts.HealthProbeBindAddress = o.HealthAddress
	opts.PprofBindAddress = o.PprofAddress
	timeout := o.ShutdownTimeout
	opts.GracefulShutdownTimeout = &timeout
}

// AddProbes registers /healthz (the process is alive) and /readyz (each
// named cache has synced) on mgr.
func AddProbes(mgr manager.Manager, caches map[string]cache.Cache) error {
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("adding health check: %w", err)
	}
	for name, c := range caches {
		if err := mgr.AddReadyzCheck(name+"-cache", cacheSynced(c)); err != nil {
			return fmt.Errorf("adding readiness check %s: %w", name, err)
		}
	}
	return nil
}

// cacheSynced is ready once c has synced; it waits at most a second per probe.
func cacheSynced(c cache.Cache) healthz.Checker {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), time.Second)
		defer cancel()
		if !c.WaitForCacheSync(ctx) {
			return errors.New("cache has not synced yet")
		}
		return nil
	}
}

// RESTConfig loads the client configuration from path, or, when path is
// empty, from $KUBECONFIG, ~/.kube/config or the in-cluster service account;
// either way without client-side rate limiting unless the kubeconfig sets
// a QPS.
func RESTConfig(path string) (*rest.Config, error) {
	if path == "" {
		return config.GetConfig()
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", path, err)
	}
	if cfg.QPS == 0 {
		// Note: as config.GetConfig does for the other sources, leave flow
		// control to the API server (priority and fairness); client-go's
		// default of 5 requests per second made the hub write 5 replicas
		// per second, and the agent's hub connection as slow (make bench).
		cfg.QPS = -1
	}
	return cfg, nil
}

// ParseFlags parses args with fs, a flag.ContinueOnError set. The flag
// package prints a parse error itself, with the usage; the error returned is
// marked so that Main does not print it a second time.
func ParseFlags(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		return printedError{err}
	}
	return err
}

// printedError is an error already printed on stderr.
type printedError struct{ error }

func (e printedError) Unwrap() error { return e.error }

// Main is a binary's main: it parses args with parse (exit 2 on bad flags,
// printed once: parse should use ParseFlags; 0 for -h), sets up the logger with the zap options zapOf gives, and runs
// run until SIGINT or SIGTERM; when run fails it logs failure and exits 1.
func Main[T any](args []string, failure string, parse func([]string) (T, error), zapOf func(T) *zap.Options, run func(context.Context, T) error) {
	opts, err := parse(args)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		if !errors.As(err, new(printedError)) {
			fmt.Fprintln(os.Stderr, err)
		}
		os.Exit(2)
	}
	SetupLogger(zapOf(opts))
	if err := run(ctrl.SetupSignalHandler(), opts); err != nil {
		ctrl.Log.Error(err, failure)
		os.Exit(1)
	}
}
