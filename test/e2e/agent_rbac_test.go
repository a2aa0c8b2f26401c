package e2e

import (
	. "github.com/onsi/ginkgo/v2"
)

var _ = Describe("A managed cluster's agent on the hub", func() {
	AgentRBACSpec(func() AgentRBACSpecInput {
		mc := env.Cluster(managedClusterNames[0])
		return AgentRBACSpecInput{
			HubClient:        env.Hub.Client,
			AgentClient:      mc.HubClient,
			ClusterName:      mc.Name,
			OtherClusterName: managedClusterNames[1],
		}
	})
})
