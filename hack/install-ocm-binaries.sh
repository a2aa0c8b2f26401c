#!/usr/bin/env bash
# install-ocm-binaries.sh builds OCM's own binaries (registration, work,
# placement, and addon for its API conversion webhook) from the Go module
# proxy into the machine's asset cache (hack/lib/assets.sh), linked from
# bin/ocm/<version>/, and copies the manifests internal/test/ocmagents reads
# beside them, under manifests/ at their paths in the ocm module. It does
# nothing when they are already there, so runs after the first, and other
# checkouts on the machine, are free.
#
# Note: OCM is built from a scratch module of its own, like the control
# plane: inside Canopy's module its dependencies (openshift/api, its own
# addon-framework and sdk-go) would constrain Canopy's Kubernetes and
# controller-runtime versions. The checksum database does not answer for
# some of its modules, hence GONOSUMDB; the binaries are built once.
set -euo pipefail

OCM_VERSION="${OCM_VERSION:-1.2.0}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
asset_override="${OCM_ASSETS_DIR:-}"
# shellcheck source=lib/assets.sh
source "$root/hack/lib/assets.sh"
asset_begin ocm "$OCM_VERSION"
dest="$asset_dest"
components=(registration work placement addon)
# manifests are what internal/test/ocmagents needs: the hub RBAC OCM
# registration gives each cluster's work agent, the bootstrap ClusterRole
# and its binding for the registration agents' bootstrap ServiceAccount (as
# OCM's cluster-manager chart installs them), and the AddOnPlacementScore
# CRD the placement controller watches.
manifests=(
	pkg/registration/hub/manifests/rbac/managedcluster-work-clusterrole.yaml
	pkg/registration/hub/manifests/rbac/managedcluster-work-rolebinding.yaml
	deploy/cluster-manager/chart/cluster-manager/templates/bootstrap_cluster_role.yaml
	deploy/cluster-manager/chart/cluster-manager/templates/bootstrap_sa_cluster_role_binding.yaml
	manifests/cluster-manager/hub/crds/0000_05_clusters.open-cluster-management.io_addonplacementscores.crd.yaml
)

missing_bins=()
for c in "${components[@]}"; do
	[[ -x "$dest/$c" ]] || missing_bins+=("$c")
done
missing_manifests=()
for m in "${manifests[@]}"; do
	[[ -f "$dest/manifests/$m" ]] || missing_manifests+=("$m")
done
if [[ ${#missing_bins[@]} == 0 && ${#missing_manifests[@]} == 0 ]]; then
	exit 0
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0
export GONOSUMDB="${GONOSUMDB:+$GONOSUMDB,}sigs.k8s.io/about-api,open-cluster-management.io"

cd "$work"
go mod init canopy.local/ocm >/dev/null 2>&1
go mod edit -require="open-cluster-management.io/ocm@v$OCM_VERSION"

if [[ ${#missing_manifests[@]} != 0 ]]; then
	dir="$(go mod download -json "open-cluster-management.io/ocm@v$OCM_VERSION" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
	if [[ -z "$dir" || ! -d "$dir" ]]; then
		echo "install-ocm-binaries.sh: no module directory for open-cluster-management.io/ocm@v$OCM_VERSION" >&2
		exit 1
	fi
	echo "copying OCM v$OCM_VERSION manifests into $dest/manifests"
	for m in "${missing_manifests[@]}"; do
		install -m 0644 -D "$dir/$m" "$dest/manifests/$m"
	done
fi

if [[ ${#missing_bins[@]} == 0 ]]; then
	exit 0
fi
{
	printf 'package tools\n\nimport (\n'
	for c in "${components[@]}"; do
		printf '\t_ "open-cluster-management.io/ocm/cmd/%s"\n' "$c"
	done
	printf ')\n'
} >tools.go
go mod tidy >/dev/null
for c in "${missing_bins[@]}"; do
	echo "building OCM $c v$OCM_VERSION into $dest"
	go build -trimpath -ldflags "-s -w" -o "$work/$c.bin" "open-cluster-management.io/ocm/cmd/$c"
	mv "$work/$c.bin" "$dest/$c"
done
echo "install-ocm-binaries.sh: built in ${SECONDS}s"
