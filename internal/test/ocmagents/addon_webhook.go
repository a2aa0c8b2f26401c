package ocmagents

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/canopy-policy/canopy/internal/test/testenv"
)

// addonCRDs are the addon APIs served at v1alpha1 (stored) and v1beta1,
// converted by OCM's addon webhook: addon-framework (Canopy's addon
// manager) writes v1beta1, OCM's registration agent reads v1alpha1.
var addonCRDs = []string{
	"managedclusteraddons.addon.open-cluster-management.io",
	"clustermanagementaddons.addon.open-cluster-management.io",
}

// webhookHealthPort is the port of the health probe every OCM webhook
// server listens on, fixed in its code: two cannot run on one machine at
// once, so the webhook holds a machine-wide lock (webhookLockFile) for as
// long as it runs.
const webhookHealthPort = 8000

// webhookLockFile serializes OCM webhook servers across processes.
var webhookLockFile = filepath.Join(os.TempDir(), "canopy-ocm-webhook-"+strconv.Itoa(webhookHealthPort)+".lock")

// StartAddonWebhook makes the hub of env convert its ManagedClusterAddOn
// and ClusterManagementAddOn CRDs through OCM's addon API conversion
// webhook (the addon binary's webhook-server, as the cluster-manager runs
// and configures it), until env.Stop. Without it the v1alpha1 view of an
// addon that addon-framework wrote at v1beta1 lacks its registrations, and
// OCM's registration agent never asks for the addon's credential.
//
// Note: conversion needs no cluster state, so one webhook process serves
// every Env of this test process; it runs while any of them does. OCM's
// webhook servers listen on the fixed port 8000 for health probes, so the
// webhook waits while another test process's runs (and fails when
// something else holds the port).
func StartAddonWebhook(ctx context.Context, env *testenv.Env) error {
	w, err := acquireWebhook(ctx, env.Hub.KubeconfigPath)
	if err != nil {
		return err
	}
	bctx, goRun := env.Background(ctx)
	goRun(func() {
		<-bctx.Done()
		releaseWebhook()
	})
	return convertThrough(ctx, env.Hub.Client, w.url, w.caBundle)
}

// webhook is the running conversion webhook of this test process.
type webhook struct {
	url      string
	caBundle []byte
	users    int
	stop     func() // stops the process and waits for it
}

var (
	webhookMu sync.Mutex
	running   *webhook
)

// acquireWebhook returns the running webhook, starting it (with kubeconfig,
// which its manager requires) if none runs.
func acquireWebhook(ctx context.Context, kubeconfig string) (*webhook, error) {
	webhookMu.Lock()
	defer webhookMu.Unlock()
	if running == nil {
		w, err := startWebhook(ctx, kubeconfig)
		if err != nil {
			return nil, err
		}
		running = w
	}
	running.users++
	return running, nil
}

// releaseWebhook stops the webhook when its last Env stops.
func releaseWebhook() {
	webhookMu.Lock()
	defer webhookMu.Unlock()
	if running == nil {
		return
	}
	if running.users--; running.users == 0 {
		running.stop()
		running = nil
	}
}

// startWebhook starts the webhook process, in a directory of its own, with
// the machine-wide lock held until it exits.
func startWebhook(ctx context.Context, kubeconfig string) (_ *webhook, retErr error) {
	unlock, err := lockWebhookPort(ctx)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "canopy-ocm-addon-webhook-")
	if err != nil {
		unlock()
		return nil, err
	}
	cleanup := func() { unlock(); _ = os.RemoveAll(dir) }
	certDir := filepath.Join(dir, "certs")
	caBundle, err := writeServingCert(certDir)
	var port int
	if err == nil {
		port, err = freePort()
	}
	if err != nil {
		cleanup()
		return nil, err
	}
	p := process{
		name: "addon-webhook", bin: "addon", plain: true,
		args:   []string{"webhook-server", "--port=" + strconv.Itoa(port), "--certdir=" + certDir},
		env:    []string{"KUBECONFIG=" + kubeconfig},
		ready:  `"Serving webhook server"`,
		onExit: cleanup,
	}
	bctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	if err := p.run(ctx, bctx, wg.Go, dir); err != nil {
		cancel()
		wg.Wait()
		return nil, err
	}
	stop := func() { cancel(); wg.Wait() }
	return &webhook{url: fmt.Sprintf("https://127.0.0.1:%d/convert", port), caBundle: caBundle, stop: stop}, nil
}

// lockWebhookPort takes webhookLockFile, waiting while another process
// holds it; the returned function releases it.
func lockWebhookPort(ctx context.Context) (func(), error) {
	f, err := os.OpenFile(webhookLockFile, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 5*time.Minute, true, func(context.Context) (bool, error) {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("waiting for %s (another test's OCM webhook holds port %d): %w", webhookLockFile, webhookHealthPort, err)
	}
	return func() { _ = f.Close() }, nil // closing releases the lock
}

// writeServingCert writes a serving certificate for 127.0.0.1 (tls.crt,
// tls.key) into dir and returns the bundle that verifies it.
func writeServingCert(dir string) ([]byte, error) {
	cert, key, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.IPv4(127, 0, 0, 1)}, nil)
	if err != nil {
		return nil, fmt.Errorf("generating the webhook's serving certificate: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), cert, 0o600); err != nil {
		return nil, err
	}
	return cert, os.WriteFile(filepath.Join(dir, "tls.key"), key, 0o600)
}

// freePort returns a loopback TCP port free now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// convertThrough makes the addon CRDs convert through the webhook at url,
// and waits until the hub serves v1alpha1 through it.
func convertThrough(ctx context.Context, hub client.Client, url string, caBundle []byte) error {
	for _, name := range addonCRDs {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := hub.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			return err
		}
		patch := client.MergeFrom(crd.DeepCopy())
		crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
			Strategy: apiextensionsv1.WebhookConverter,
			Webhook: &apiextensionsv1.WebhookConversion{
				ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: caBundle},
				ConversionReviewVersions: []string{"v1", "v1beta1"},
			},
		}
		if err := hub.Patch(ctx, crd, patch); err != nil {
			return fmt.Errorf("making %s convert through OCM's webhook: %w", name, err)
		}
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("addon.open-cluster-management.io/v1alpha1")
		list.SetKind("ClusterManagementAddOnList")
		return hub.List(ctx, list) == nil, nil
	})
}
