# assets.sh is sourced by the hack/install-*.sh scripts: it keeps each built
# asset (the control plane, OCM, Gatekeeper, kubectl) once per machine, in a
# cache directory outside the checkout keyed by component and version, and
# links bin/<component>/<version> of the checkout to it. A second clone, and
# CI's fresh clone after a session, find the assets built and start at once.
#
# The cache is $CANOPY_CACHE_DIR, else $XDG_CACHE_HOME/canopy, else
# ~/.cache/canopy. Two checkouts building the same asset at once take turns
# on a lock (flock), so the second finds the first's build and builds nothing.

# asset_begin <component> <key> [<link version>]: sets asset_dest to the
# cache directory of the asset and takes its lock, held until the script
# exits. bin/<component>/<link version> (the key when omitted) is linked to
# it by asset_link. A directory given in asset_override (the scripts'
# *_ASSETS_DIR variables) is used as it is, unshared and unlinked.
asset_begin() {
	local component="$1" key="$2"
	asset_link_path="$root/bin/$component/${3:-$key}"
	if [[ -n "${asset_override:-}" ]]; then
		asset_dest="$asset_override"
		asset_link_path=""
		mkdir -p "$asset_dest"
		return
	fi
	local cache="${CANOPY_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/canopy}"
	asset_dest="$cache/$component/$key"
	mkdir -p "$cache/$component"
	exec {asset_lock_fd}>"$asset_dest.lock"
	if ! flock -n "$asset_lock_fd"; then
		echo "waiting for another build of $component $key ($asset_dest.lock)" >&2
		flock "$asset_lock_fd"
	fi
	# A checkout from before the cache built into bin/ itself: its directory
	# moves into the cache when the cache has none, else gives way to the link.
	if [[ -d "$asset_link_path" && ! -L "$asset_link_path" ]]; then
		if [[ -e "$asset_dest" ]]; then
			rm -rf "$asset_link_path"
		else
			mv "$asset_link_path" "$asset_dest"
		fi
	fi
	mkdir -p "$asset_dest"
	asset_link
}

# asset_link points bin/<component>/<version> at the cache directory.
asset_link() {
	[[ -n "$asset_link_path" ]] || return 0
	mkdir -p "$(dirname "$asset_link_path")"
	ln -sfn "$asset_dest" "$asset_link_path"
}
