package e2e

import (
	. "github.com/onsi/ginkgo/v2" //nolint:revive // ginkgo's DSL reads best unqualified
)

var _ = Describe("Order operator installs across clusters", func() {
	OrderedInstallSpec(func() OrderedInstallSpecInput {
		return OrderedInstallSpecInput{
			Env:      env,
			Clusters: managedClusterNames,
			Example:  ExamplePath("ordered-install", "policy.yaml"),
		}
	})
})
