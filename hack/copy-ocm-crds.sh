#!/usr/bin/env bash
# copy-ocm-crds.sh copies into deploy/crds/ocm/ the Open Cluster Management
# CRDs a Canopy hub needs, from the open-cluster-management.io/api module
# that go.mod pins, so that tests and installs use the same versions as the
# Go clients.
#
# Note: the addon CRDs come from addon/v1beta1, which serve both v1alpha1 and
# v1beta1 (addon-framework v1.3.0's clients use v1beta1), except AddOnTemplate,
# which exists only in addon/v1alpha1. Never copy both files of one CRD.
#
# Note: OCM converts the addon versions with a webhook that Canopy does not
# run. Without it the API server only relabels stored objects, so the
# storage version must be the one the clients use: as addon-framework's own
# integration tests do, ManagedClusterAddOn and ClusterManagementAddOn are
# switched to store v1beta1.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
# Note: go list -m prints no directory for a module not yet downloaded.
go mod download open-cluster-management.io/api
src="$(go list -m -f '{{.Dir}}' open-cluster-management.io/api)"
if [[ -z "$src" || ! -d "$src" ]]; then
	echo "copy-ocm-crds: open-cluster-management.io/api is not in the module cache" >&2
	exit 1
fi
dest="$root/deploy/crds/ocm"

files=(
	cluster/v1/0000_00_clusters.open-cluster-management.io_managedclusters.crd.yaml
	cluster/v1beta2/0000_00_clusters.open-cluster-management.io_managedclustersets.crd.yaml
	cluster/v1beta2/0000_01_clusters.open-cluster-management.io_managedclustersetbindings.crd.yaml
	cluster/v1alpha1/0000_02_clusters.open-cluster-management.io_clusterclaims.crd.yaml
	cluster/v1beta1/0000_02_clusters.open-cluster-management.io_placements.crd.yaml
	cluster/v1beta1/0000_03_clusters.open-cluster-management.io_placementdecisions.crd.yaml
	addon/v1beta1/0000_00_addon.open-cluster-management.io_clustermanagementaddons.crd.yaml
	addon/v1beta1/0000_01_addon.open-cluster-management.io_managedclusteraddons.crd.yaml
	addon/v1beta1/0000_02_addon.open-cluster-management.io_addondeploymentconfigs.crd.yaml
	addon/v1alpha1/0000_03_addon.open-cluster-management.io_addontemplates.crd.yaml
	work/v1/0000_00_work.open-cluster-management.io_manifestworks.crd.yaml
	work/v1/0000_01_work.open-cluster-management.io_appliedmanifestworks.crd.yaml
)
store_v1beta1=(
	addon.open-cluster-management.io_clustermanagementaddons
	addon.open-cluster-management.io_managedclusteraddons
)

rm -rf "$dest"
mkdir -p "$dest"
for f in "${files[@]}"; do
	# Drop the 0000_NN_ ordering prefix and the .crd suffix: the names then
	# read like controller-gen's (group_plural.yaml).
	name="$(basename "$f" .crd.yaml)"
	name="${name#0000_[0-9][0-9]_}"
	install -m 0644 "$src/$f" "$dest/$name.yaml"
done

for name in "${store_v1beta1[@]}"; do
	file="$dest/$name.yaml"
	# Each of these files has exactly two versions: v1alpha1 (storage) then
	# v1beta1. Swap their storage flags, and check the result.
	if [[ "$(grep -c '^    storage: ' "$file")" != 2 ]]; then
		echo "copy-ocm-crds: $file: expected two versions" >&2
		exit 1
	fi
	sed -i -e 's/^    storage: true$/    storage: __true__/' \
		-e 's/^    storage: false$/    storage: true/' \
		-e 's/^    storage: __true__$/    storage: false/' "$file"
	if ! awk '/^    name: v1beta1$/ { v = 1 } v && /^    storage: true$/ { ok = 1 } END { exit !ok }' "$file"; then
		echo "copy-ocm-crds: $file: v1beta1 is not the storage version" >&2
		exit 1
	fi
done
