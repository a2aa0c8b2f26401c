package e2e

import (
	. "github.com/onsi/ginkgo/v2" //nolint:revive // ginkgo's DSL reads best unqualified
)

var _ = Describe("One policy, per-cluster values: OCM templates", func() {
	TemplatesSpec(func() TemplatesSpecInput {
		return TemplatesSpecInput{
			Env:      env,
			Clusters: managedClusterNames,
			Dir:      ExamplePath("templates"),
		}
	})
})
