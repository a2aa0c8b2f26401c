#!/usr/bin/env bash
# install-envtest-assets.sh builds the control-plane binaries the tests run
# (kube-apiserver, kube-controller-manager and etcd) from the Go module proxy
# into the machine's asset cache (hack/lib/assets.sh), linked from
# bin/k8s/<version>/. kube-controller-manager runs on the hub only, with
# its CSR signing and approving controllers: it signs the client certificates
# OCM's registration asks for.
# It does nothing when they are already there, so runs after the first, and
# other checkouts on the machine, are free. Each binary is built in a scratch
# directory and moved into place, so an interrupted build leaves none that
# looks complete.
#
# Note: `go install k8s.io/kubernetes/cmd/kube-apiserver@vX` is refused because
# k8s.io/kubernetes replaces its staging modules with local paths; a scratch
# module that requires it and pins each staging module to its published tag
# builds the same binary.
set -euo pipefail

KUBE_VERSION="${KUBE_VERSION:-1.37.1}"
ETCD_VERSION="${ETCD_VERSION:-3.6.16}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
asset_override="${ENVTEST_ASSETS_DIR:-}"
# shellcheck source=lib/assets.sh
source "$root/hack/lib/assets.sh"
asset_begin k8s "$KUBE_VERSION-etcd$ETCD_VERSION" "$KUBE_VERSION"
dest="$asset_dest"

kube_components=(kube-apiserver kube-controller-manager)
missing_kube=()
for c in "${kube_components[@]}"; do
	[[ -x "$dest/$c" ]] || missing_kube+=("$c")
done
if [[ ${#missing_kube[@]} == 0 && -x "$dest/etcd" ]]; then
	exit 0
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0

# build_kube builds the missing Kubernetes components from one scratch module.
build_kube() {
	local dir="$work/kubernetes" minor="${KUBE_VERSION#*.}"
	minor="${minor%%.*}"
	mkdir -p "$dir"
	cd "$dir"
	go mod init canopy.local/kubernetes >/dev/null 2>&1
	go mod edit -require="k8s.io/kubernetes@v$KUBE_VERSION"
	# Fetch k8s.io/kubernetes' go.mod to learn its staging modules.
	local gomod
	gomod="$(go mod download -json "k8s.io/kubernetes@v$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
	local staging
	# Staging modules are required at exactly v0.0.0 (pseudo-versions such as
	# k8s.io/utils' v0.0.0-2025... are real versions and stay as they are).
	staging="$(awk '$1 == "require" { $1 = ""; $0 = $0 } $1 ~ /^k8s\.io\// && $2 == "v0.0.0" { print $1 }' "$gomod" | sort -u)"
	for mod in $staging; do
		go mod edit -replace="$mod=$mod@v0.$minor.${KUBE_VERSION##*.}"
	done
	{
		printf 'package tools\n\nimport (\n'
		for c in "${kube_components[@]}"; do
			printf '\t_ "k8s.io/kubernetes/cmd/%s/app"\n' "$c"
		done
		printf ')\n'
	} >tools.go
	go mod tidy >/dev/null
	local ldflags="-s -w"
	ldflags+=" -X k8s.io/component-base/version.gitVersion=v$KUBE_VERSION"
	ldflags+=" -X k8s.io/component-base/version.gitMajor=1"
	ldflags+=" -X k8s.io/component-base/version.gitMinor=$minor"
	for c in "${missing_kube[@]}"; do
		go build -trimpath -ldflags "$ldflags" -o "$work/$c" "k8s.io/kubernetes/cmd/$c"
		mv "$work/$c" "$dest/$c"
	done
}

build_etcd() {
	local dir="$work/etcd"
	mkdir -p "$dir"
	cd "$dir"
	go mod init canopy.local/etcd >/dev/null 2>&1
	go mod edit -require="go.etcd.io/etcd/server/v3@v$ETCD_VERSION"
	printf 'package tools\n\nimport _ "go.etcd.io/etcd/server/v3/etcdmain"\n' >tools.go
	go mod tidy >/dev/null
	go build -trimpath -ldflags "-s -w" -o "$work/etcd.bin" go.etcd.io/etcd/server/v3
	mv "$work/etcd.bin" "$dest/etcd"
}

echo "Building ${missing_kube[*]} v$KUBE_VERSION and etcd v$ETCD_VERSION into $dest (a few minutes the first time)" >&2
[[ -x "$dest/etcd" ]] || build_etcd
[[ ${#missing_kube[@]} == 0 ]] || build_kube
"$dest/kube-apiserver" --version >&2
"$dest/kube-controller-manager" --version >&2
"$dest/etcd" --version >&2
echo "install-envtest-assets.sh: built in ${SECONDS}s" >&2
