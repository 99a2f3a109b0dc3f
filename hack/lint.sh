#!/usr/bin/env bash
# lint.sh installs golangci-lint with the Kubernetes API linter (kube-api-linter)
# built in, pinned by version, into a cache outside the repository, and prints
# the binary's path on its last line of standard output.
#
#   hack/lint.sh             # build when missing (about 5 minutes cold), print the path
#   TABWARDEN_TOOLS_CACHE=…  # where to cache (default ~/.cache/tabwarden/tools)
set -euo pipefail

pkg=sigs.k8s.io/kube-api-linter/cmd/golangci-lint-kube-api-linter
version=v0.0.0-20260716143926-092fe0c72997
cache=${TABWARDEN_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tabwarden/tools}
dir="$cache/golangci-lint-kube-api-linter-$version-$(go env GOOS)-$(go env GOARCH)"
bin="$dir/golangci-lint-kube-api-linter"

if [[ -x "$bin" ]]; then
  echo "$bin"
  exit 0
fi

mkdir -p "$dir"
tmp=$(mktemp -d "$dir/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "lint: building $pkg@$version into $dir (about 5 minutes on 2 cores with a cold Go cache)" >&2
GOBIN="$tmp" go install "$pkg@$version"
# Move into place atomically so an interrupted build never leaves a
# half-written binary where the check above would trust it.
mv "$tmp/golangci-lint-kube-api-linter" "$bin"
echo "$bin"
