#!/usr/bin/env bash
# install-gatekeeper.sh builds Gatekeeper's manager (the audit and webhook
# binary, the root package of github.com/open-policy-agent/gatekeeper/v3)
# from the Go module proxy into the machine's asset cache
# (hack/lib/assets.sh), linked from bin/gatekeeper/<version>/, as manager,
# and copies its CRDs (the Helm chart's crds/ directory, plain YAML) beside
# it under crds/. internal/test/gatekeeper runs the manager audit-only
# against a test API server. It does nothing when both are already there, so
# runs after the first, and other checkouts on the machine, are free.
#
# Note: Gatekeeper is built from a scratch module of its own, like OCM's
# binaries (hack/install-ocm-binaries.sh): inside Canopy's module its
# dependencies (OPA, its frameworks module) would constrain Canopy's
# Kubernetes and controller-runtime versions. The first build takes 15
# minutes or more on two cores.
set -euo pipefail

GATEKEEPER_VERSION="${GATEKEEPER_VERSION:-3.20.1}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
asset_override="${GATEKEEPER_ASSETS_DIR:-}"
# shellcheck source=lib/assets.sh
source "$root/hack/lib/assets.sh"
asset_begin gatekeeper "$GATEKEEPER_VERSION"
dest="$asset_dest"
module="github.com/open-policy-agent/gatekeeper/v3"
crds=manifest_staging/charts/gatekeeper/crds

if [[ -x "$dest/manager" && -f "$dest/crds/constrainttemplate-customresourcedefinition.yaml" ]]; then
	exit 0
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0

cd "$work"
go mod init canopy.local/gatekeeper >/dev/null 2>&1
go mod edit -require="$module@v$GATEKEEPER_VERSION"

dir="$(go mod download -json "$module@v$GATEKEEPER_VERSION" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
if [[ -z "$dir" || ! -d "$dir/$crds" ]]; then
	echo "install-gatekeeper.sh: no CRD directory in $module@v$GATEKEEPER_VERSION" >&2
	exit 1
fi
echo "copying Gatekeeper v$GATEKEEPER_VERSION CRDs into $dest/crds"
mkdir -p "$dest/crds"
install -m 0644 "$dir/$crds"/*.yaml "$dest/crds/"

if [[ -x "$dest/manager" ]]; then
	exit 0
fi
printf 'package tools\n\nimport _ "%s"\n' "$module" >tools.go
# Gatekeeper's own go.sum (the module is verified by the checksum database)
# vouches for its dependencies: some, such as its cert-controller
# pseudo-version, the checksum database does not answer for.
install -m 0644 "$dir/go.sum" go.sum
go mod tidy >/dev/null
echo "building Gatekeeper manager v$GATEKEEPER_VERSION into $dest"
# The binary is written beside its final name and renamed, so an
# interrupted build never leaves a manager that looks complete.
go build -trimpath -ldflags "-s -w" -o "$dest/manager.tmp" "$module"
mv "$dest/manager.tmp" "$dest/manager"
echo "install-gatekeeper.sh: built in ${SECONDS}s"
