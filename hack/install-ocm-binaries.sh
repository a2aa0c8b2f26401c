#!/usr/bin/env bash
# install-ocm-binaries.sh builds OCM's own binaries (registration, work,
# placement) from the Go module proxy into bin/ocm/<version>/. It does
# nothing when they are already there, so runs after the first are free.
#
# Note: OCM is built from a scratch module of its own, like the control
# plane: inside Canopy's module its dependencies (openshift/api, its own
# addon-framework and sdk-go) would constrain Canopy's Kubernetes and
# controller-runtime versions. The checksum database does not answer for
# some of its modules, hence GONOSUMDB; the binaries are built once.
set -euo pipefail

OCM_VERSION="${OCM_VERSION:-1.2.0}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${OCM_ASSETS_DIR:-$root/bin/ocm/$OCM_VERSION}"
components=(registration work placement)

missing=0
for c in "${components[@]}"; do
	[[ -x "$dest/$c" ]] || missing=1
done
if [[ $missing == 0 ]]; then
	exit 0
fi
mkdir -p "$dest"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0
export GONOSUMDB="${GONOSUMDB:+$GONOSUMDB,}sigs.k8s.io/about-api,open-cluster-management.io"

cd "$work"
go mod init canopy.local/ocm >/dev/null 2>&1
go mod edit -require="open-cluster-management.io/ocm@v$OCM_VERSION"
{
	printf 'package tools\n\nimport (\n'
	for c in "${components[@]}"; do
		printf '\t_ "open-cluster-management.io/ocm/cmd/%s"\n' "$c"
	done
	printf ')\n'
} >tools.go
go mod tidy >/dev/null
for c in "${components[@]}"; do
	echo "building OCM $c v$OCM_VERSION into $dest"
	go build -trimpath -ldflags "-s -w" -o "$dest/$c" "open-cluster-management.io/ocm/cmd/$c"
done
