#!/usr/bin/env bash
# install-kubectl.sh builds kubectl (k8s.io/kubernetes/cmd/kubectl, with its
# kustomize for `kubectl apply -k`) from the Go module proxy into the
# machine's asset cache (hack/lib/assets.sh), linked from
# bin/kubectl/<version>/, for test/install, which runs the commands of
# docs/install.md as a person would. It does nothing when kubectl is already
# there, so runs after the first, and other checkouts on the machine, are free.
#
# Note: as hack/install-envtest-assets.sh explains, k8s.io/kubernetes cannot
# be built with `go install`; a scratch module that pins each staging module
# to its published tag builds the same binary.
set -euo pipefail

KUBE_VERSION="${KUBE_VERSION:-1.37.1}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
asset_override="${KUBECTL_DIR:-}"
# shellcheck source=lib/assets.sh
source "$root/hack/lib/assets.sh"
asset_begin kubectl "$KUBE_VERSION"
dest="$asset_dest"
[[ -x "$dest/kubectl" ]] && exit 0

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0
minor="${KUBE_VERSION#*.}"
minor="${minor%%.*}"

cd "$work"
go mod init canopy.local/kubectl >/dev/null 2>&1
go mod edit -require="k8s.io/kubernetes@v$KUBE_VERSION"
gomod="$(go mod download -json "k8s.io/kubernetes@v$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
for mod in $(awk '$1 == "require" { $1 = ""; $0 = $0 } $1 ~ /^k8s\.io\// && $2 == "v0.0.0" { print $1 }' "$gomod" | sort -u); do
	go mod edit -replace="$mod=$mod@v0.$minor.${KUBE_VERSION##*.}"
done
printf 'package tools\n\nimport _ "k8s.io/kubernetes/cmd/kubectl"\n' >tools.go
go mod tidy >/dev/null
echo "Building kubectl v$KUBE_VERSION into $dest (a few minutes the first time)" >&2
ldflags="-s -w"
ldflags+=" -X k8s.io/component-base/version.gitVersion=v$KUBE_VERSION"
ldflags+=" -X k8s.io/component-base/version.gitMajor=1"
ldflags+=" -X k8s.io/component-base/version.gitMinor=$minor"
# Note: built into the scratch directory and moved, so that a build that
# stops half-way leaves no kubectl that the check above would take.
go build -trimpath -ldflags "$ldflags" -o "$work/kubectl" k8s.io/kubernetes/cmd/kubectl
mv "$work/kubectl" "$dest/kubectl"
"$dest/kubectl" version --client >&2
echo "install-kubectl.sh: built in ${SECONDS}s" >&2
