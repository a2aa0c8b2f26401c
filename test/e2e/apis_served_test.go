package e2e

import (
	. "github.com/onsi/ginkgo/v2"
)

var _ = Describe("The hub", func() {
	APIsServedSpec(func() APIsServedSpecInput {
		return APIsServedSpecInput{
			ClusterName: env.Hub.Name,
			Config:      env.Hub.Config,
			Client:      env.Hub.Client,
			Kinds:       append(append([]ServedKind{}, CanopyKinds...), OCMKinds...),
		}
	})
})

var _ = Describe("Each managed cluster", func() {
	for _, name := range managedClusterNames {
		Context(name, func() {
			APIsServedSpec(func() APIsServedSpecInput {
				mc := env.Cluster(name)
				return APIsServedSpecInput{
					ClusterName: name,
					Config:      mc.Config,
					Client:      mc.Client,
					Kinds:       append(append([]ServedKind{}, CanopyKinds...), OCMKinds...),
				}
			})
		})
	}
})
