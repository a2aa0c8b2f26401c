package e2e

import (
	"os"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/canopy-policy/canopy/internal/testenv/ocmagents"
)

// startWorkAgent starts OCM's work agent of the first managed cluster once
// per suite, when the suite started its own clusters; existing clusters
// (kind) are expected to run OCM's klusterlet.
var startWorkAgent sync.Once

var _ = Describe("Enabling the addon on a managed cluster", func() {
	AddonInstallSpec(func() AddonInstallSpecInput {
		mc := env.Cluster(managedClusterNames[0])
		if os.Getenv(EnvHubKubeconfig) == "" {
			startWorkAgent.Do(func() {
				Expect(ocmagents.StartWorkAgent(GinkgoT().Context(), env, mc)).To(Succeed())
			})
		}
		return AddonInstallSpecInput{
			Env:           env,
			HubConfig:     env.Hub.Config,
			HubClient:     env.Hub.Client,
			ManagedClient: mc.Client,
			ClusterName:   mc.Name,
		}
	})
})
