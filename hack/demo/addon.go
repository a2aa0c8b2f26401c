package main

import (
	"context"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/canopy-policy/canopy/internal/test/ocmagents"
	"github.com/canopy-policy/canopy/pkg/hub/addon"
)

// enableAddon enables the canopy-policy addon on every managed cluster, as
// `clusteradm addon enable --names canopy-policy --clusters ...` does, waits
// until OCM's work agents have applied the agent's manifests there, and
// until OCM has issued each agent's hub credential.
//
// Note: no kubelet runs the delivered Deployment in the local environment;
// the agents run as local processes with the same flags (startAgents),
// with the credential's files where a kubelet would mount them.
func (d *demo) enableAddon(ctx context.Context) error {
	names := make([]string, 0, len(d.env.Managed))
	for _, m := range d.env.Managed {
		if err := d.env.EnableAddon(ctx, m.Name, addon.Name); err != nil {
			return err
		}
		names = append(names, m.Name)
	}
	d.say("Enabled addon %s on %s (what clusteradm addon enable does).", addon.Name, strings.Join(names, ", "))
	deadline := time.Now().Add(time.Minute)
	for _, name := range names {
		for !d.manifestsApplied(ctx, name) {
			if time.Now().After(deadline) || ctx.Err() != nil {
				d.say("  the agent's manifests are not applied on %s yet; see the ManagedClusterAddOn's conditions", name)
				return nil
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	d.say("  OCM's work agents applied the agent's manifests (Deployment, RBAC, CRDs) in %s on every cluster.",
		addon.DefaultInstallNamespace)
	for _, m := range d.env.Managed {
		if err := ocmagents.AddonCredential(ctx, d.env, m, addon.Name, addon.DefaultInstallNamespace); err != nil {
			return err
		}
	}
	d.say("  OCM's registration agents got each agent's hub credential (a CSR approved by Canopy's addon manager),")
	d.say("  the Secret %s-hub-kubeconfig in %s; the agents run with it.", addon.Name, addon.DefaultInstallNamespace)
	return nil
}

func (d *demo) manifestsApplied(ctx context.Context, cluster string) bool {
	mca := &addonv1beta1.ManagedClusterAddOn{}
	key := client.ObjectKey{Namespace: cluster, Name: addon.Name}
	return d.env.Hub.Client.Get(ctx, key, mca) == nil &&
		meta.IsStatusConditionTrue(mca.Status.Conditions, addonv1beta1.ManagedClusterAddOnManifestApplied)
}
