package e2e

import (
	. "github.com/onsi/ginkgo/v2" //nolint:revive // ginkgo's DSL reads best unqualified
)

var _ = Describe("Roll operators out across clusters, canary first", func() {
	OperatorsSpec(func() OperatorsSpecInput {
		return OperatorsSpecInput{Example: ExamplePath("operators", "operators.yaml")}
	})
})
