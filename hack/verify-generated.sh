#!/usr/bin/env bash
# verify-generated.sh fails when regenerating changes a generated file or when
# go.mod/go.sum are not tidy. It compares content hashes before and after, so
# it works in a clean clone and in a work tree with uncommitted changes alike.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

generated() {
	find api deploy -type f \( -name 'zz_generated*.go' -o -name '*.yaml' \) 2>/dev/null | sort
	echo go.mod go.sum
}
snapshot() { generated | xargs sha256sum; }

before="$(snapshot)"
make --no-print-directory generate manifests >/dev/null
go mod tidy
after="$(snapshot)"
if [[ "$before" != "$after" ]]; then
	echo "Generated files were stale; they are now regenerated — review and commit them:" >&2
	diff <(echo "$before") <(echo "$after") >&2 || true
	exit 1
fi
echo "Generated files are up to date."
