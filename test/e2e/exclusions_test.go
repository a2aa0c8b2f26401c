package e2e

import (
	. "github.com/onsi/ginkgo/v2" //nolint:revive // ginkgo's DSL reads best unqualified
)

var _ = Describe("Keep one policy of a set off a cluster", func() {
	ExclusionsSpec(func() ExclusionsSpecInput {
		return ExclusionsSpecInput{
			Env:      env,
			Clusters: managedClusterNames,
			Example:  ExamplePath("exclusions", "policyset.yaml"),
		}
	})
})
