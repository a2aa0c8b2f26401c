#!/usr/bin/env bash
# kind.sh runs the e2e suite against three kind clusters: canopy-hub,
# canopy-cluster1 and canopy-cluster2. It needs Docker (or podman, see kind's
# KIND_EXPERIMENTAL_PROVIDER). Clusters that already exist are reused; they
# are deleted afterwards unless KEEP_CLUSTERS=1. Extra arguments go to
# `go test`, for example: test/e2e/kind.sh -args -ginkgo.focus=agent
#
# The suite connects through the kubeconfigs (E2E_HUB_KUBECONFIG,
# E2E_MANAGED_KUBECONFIGS): it installs the CRDs and admission policies each
# cluster lacks and registers cluster1 and cluster2 on the hub, each agent's
# hub identity being a ServiceAccount token bound to its cluster namespace.
#
# kind is the version go.mod pins (its tool directive), built once into
# bin/kind/<version>/. Each cluster is created from test/e2e/kind-cluster.yaml,
# or from the file E2E_KIND_CONFIG names.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dir="${E2E_KIND_DIR:-$root/bin/e2e-kind}"
mkdir -p "$dir"

config="${E2E_KIND_CONFIG:-$root/test/e2e/kind-cluster.yaml}"

# kind's version is the one go.mod pins; a build is kept per version.
version="$(cd "$root" && go list -m -f '{{.Version}}' sigs.k8s.io/kind)"
kind="$root/bin/kind/$version/kind"
if [[ ! -x "$kind" ]]; then
	mkdir -p "$(dirname "$kind")"
	(cd "$root" && go build -o "$kind.$$" sigs.k8s.io/kind && mv "$kind.$$" "$kind")
fi

clusters=(hub cluster1 cluster2)
for c in "${clusters[@]}"; do
	if ! "$kind" get clusters 2>/dev/null | grep -qx "canopy-$c"; then
		"$kind" create cluster --name "canopy-$c" --config "$config" --wait 2m --kubeconfig "$dir/$c.kubeconfig"
	fi
	"$kind" get kubeconfig --name "canopy-$c" >"$dir/$c.kubeconfig"
done

cleanup() {
	if [[ "${KEEP_CLUSTERS:-}" != 1 ]]; then
		for c in "${clusters[@]}"; do "$kind" delete cluster --name "canopy-$c" || true; done
	fi
}
trap cleanup EXIT

cd "$root"
E2E_HUB_KUBECONFIG="$dir/hub.kubeconfig" \
E2E_MANAGED_KUBECONFIGS="cluster1=$dir/cluster1.kubeconfig,cluster2=$dir/cluster2.kubeconfig" \
	go test ./test/e2e/... -count=1 -v "$@"
