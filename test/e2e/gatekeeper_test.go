package e2e

import (
	. "github.com/onsi/ginkgo/v2" //nolint:revive // ginkgo's DSL reads best unqualified
)

var _ = Describe("Gatekeeper constraints from hub policies", func() {
	GatekeeperSpec(func() GatekeeperSpecInput {
		return GatekeeperSpecInput{
			Env:      env,
			Clusters: managedClusterNames,
			Example:  ExamplePath("gatekeeper", "policy.yaml"),
		}
	})
})
