package e2e

import (
	. "github.com/onsi/ginkgo/v2" //nolint:revive // ginkgo's DSL reads best unqualified
)

var _ = Describe("Know which clusters hold certificates about to expire: CertificatePolicy", func() {
	CertificatesSpec(func() CertificatesSpecInput {
		return CertificatesSpecInput{Env: env, Clusters: managedClusterNames}
	})
})
