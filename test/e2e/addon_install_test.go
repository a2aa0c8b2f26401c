package e2e

import (
	. "github.com/onsi/ginkgo/v2"
)

var _ = Describe("Enabling the addon on a managed cluster", func() {
	AddonInstallSpec(func() AddonInstallSpecInput {
		// Note: each cluster's work agent runs already: the suite's clusters
		// joined with OCM's klusterlet agents (StartEnvironment).
		mc := env.Cluster(managedClusterNames[0])
		return AddonInstallSpecInput{
			Env:           env,
			HubConfig:     env.Hub.Config,
			HubClient:     env.Hub.Client,
			ManagedClient: mc.Client,
			ClusterName:   mc.Name,
		}
	})
})
