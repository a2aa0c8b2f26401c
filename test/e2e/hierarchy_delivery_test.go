package e2e

import (
	. "github.com/onsi/ginkgo/v2" //nolint:revive // ginkgo's DSL reads best unqualified
)

var _ = Describe("Deliver a HierarchyPolicy from the hub", func() {
	HierarchyDeliverySpec(func() HierarchyDeliverySpecInput {
		return HierarchyDeliverySpecInput{
			Env:      env,
			Clusters: managedClusterNames,
			Example:  ExamplePath("hierarchy", "policy.yaml"),
		}
	})
})
