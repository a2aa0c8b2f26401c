package controlplane

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1 "k8s.io/api/core/v1"
)

// Pause stops the control plane's kube-apiserver and etcd but keeps what
// Resume needs to bring the same cluster back: etcd's data, the
// certificates (so every issued client certificate stays valid) and the
// address. Clients see the API server as unreachable meanwhile. Only control
// planes started by this package can be paused.
func (c *ControlPlane) Pause() error {
	if c.env == nil {
		return fmt.Errorf("control plane %s is an existing cluster: cannot pause it", c.Name)
	}
	// Note: with clients watching, kube-apiserver may outlive the stop
	// timeout; envtest then kills it, which is a fine way to lose a hub.
	if err := c.env.ControlPlane.Stop(); err != nil && !strings.Contains(err.Error(), "timeout waiting for process") {
		return fmt.Errorf("pausing control plane %s: %w", c.Name, err)
	}
	return nil
}

// Resume starts a paused control plane again, with the same data, address
// and certificates, and returns once it serves requests.
func (c *ControlPlane) Resume(ctx context.Context) error {
	if c.env == nil {
		return fmt.Errorf("control plane %s is an existing cluster: cannot resume it", c.Name)
	}
	if err := c.env.ControlPlane.Start(); err != nil { // Note: envtest takes no context
		return fmt.Errorf("resuming control plane %s: %w", c.Name, err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return c.Client.List(ctx, &corev1.NamespaceList{}, client.Limit(1)) == nil, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for control plane %s to serve: %w", c.Name, err)
	}
	warmCRDStorage(ctx, c.Config, c.env.CRDs)
	return nil
}
