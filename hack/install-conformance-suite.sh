#!/usr/bin/env bash
# install-conformance-suite.sh builds OCM config-policy-controller's own
# end-to-end suite (its test/e2e package, unchanged) from the Go module proxy
# into the machine's asset cache (hack/lib/assets.sh), linked from
# bin/conformance/<version>/, for test/conformance, which runs it against
# canopy-agent. It does nothing when the suite is already there.
#
# What it leaves there:
#   e2e.test   upstream's test/e2e compiled with `go test -c`
#   ginkgo     the ginkgo CLI of upstream's ginkgo version, which runs the
#              compiled suite in parallel processes
#   src/       upstream's test/ and deploy/crds trees: the suite reads its
#              YAML from ../resources and its kubeconfig from ../../ relative
#              to test/e2e, so test/conformance copies src/ and runs there
#
# Note: upstream is built as the main module of a scratch copy of its own
# module, with its own go.mod and go.sum, so none of its dependencies
# constrain Canopy's and none of its code enters this repository.
set -euo pipefail

CPC_VERSION="${CPC_VERSION:-0.19.0}"
module=open-cluster-management.io/config-policy-controller
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
asset_override="${CONFORMANCE_ASSETS_DIR:-}"
# shellcheck source=lib/assets.sh
source "$root/hack/lib/assets.sh"
asset_begin conformance "$CPC_VERSION"
dest="$asset_dest"
if [[ -x "$dest/e2e.test" && -x "$dest/ginkgo" && -d "$dest/src/test/e2e" ]]; then
	exit 0
fi

work="$(mktemp -d)"
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
export GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0
echo "Building $module v$CPC_VERSION's e2e suite into $dest (minutes the first time)" >&2
cd "$work"
go mod init canopy.local/download >/dev/null 2>&1
dir="$(go mod download -json "$module@v$CPC_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')"
cp -r "$dir" "$work/module"
chmod -R u+w "$work/module"
cd "$work/module"
go test -c -o "$work/e2e.test" ./test/e2e
ginkgo_version="$(go list -m -f '{{.Version}}' github.com/onsi/ginkgo/v2)"
go build -o "$work/ginkgo" "github.com/onsi/ginkgo/v2/ginkgo@$ginkgo_version" 2>/dev/null ||
	go build -o "$work/ginkgo" github.com/onsi/ginkgo/v2/ginkgo
mkdir -p "$work/out/src/deploy"
cp -r "$work/module/test" "$work/out/src/test"
cp -r "$work/module/deploy/crds" "$work/out/src/deploy/crds"
mv "$work/e2e.test" "$work/ginkgo" "$work/out/"
# Note: moved into place last, so that a build that stops half-way leaves
# nothing the check above would take.
rm -rf "$dest"
mv "$work/out" "$dest"
echo "install-conformance-suite.sh: built in ${SECONDS}s" >&2
