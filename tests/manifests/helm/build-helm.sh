#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Builds helm from its published Go module (helm.sh/helm/v4, pinned with its
# dependencies in go.mod + go.sum beside this script) into a per-machine
# cache keyed by everything that shapes the binary, for the chart checks
# (tests/manifests/check_chart.py). Prints the binary's path.
#
#   tests/manifests/helm/build-helm.sh [--print-path] [-q]
#
# --print-path  print where the current pins put helm, build nothing
#
# Cache: $IOQOS_TOOLS_CACHE (default /var/cache/ioqos-tools)/helm-<version>-<key>/helm.
# A second run finds it and builds nothing (a few minutes on 2 cores the
# first time). No binary is downloaded: only Go modules, through the Go
# module proxy, checked against go.sum.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${IOQOS_TOOLS_CACHE:-/var/cache/ioqos-tools}
PRINT=0 QUIET=0
for a in "$@"; do
  case "$a" in
    --print-path) PRINT=1 ;;
    -q) QUIET=1 ;;
    -h|--help) sed -n '3,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-helm: unknown argument $a (try --help)" >&2; exit 2 ;;
  esac
done
log() { [ "$QUIET" = 1 ] || echo "build-helm: $*" >&2; }
die() { echo "build-helm: $*" >&2; exit 1; }

command -v go >/dev/null || PATH=$PATH:/usr/local/go/bin
command -v go >/dev/null || die "go not found (Go 1.26 builds helm; install it or set PATH)"
[ -n "${HOME:-}" ] || export HOME=/root
VERSION=$(sed -n 's/^require helm\.sh\/helm\/v4 \(v[0-9.]*\)$/\1/p' "$HERE/go.mod")
[ -n "$VERSION" ] || die "$HERE/go.mod does not require helm.sh/helm/v4 vX.Y.Z"
KEY=$( { go env GOVERSION; cat "$0" "$HERE/go.mod" "$HERE/go.sum" "$HERE/tools.go"; } | sha256sum | cut -c1-16)
OUT=$CACHE/helm-$VERSION-$KEY
if [ "$PRINT" = 1 ]; then echo "$OUT/helm"; exit 0; fi
if [ -x "$OUT/helm" ]; then log "cached: $OUT/helm"; echo "$OUT/helm"; exit 0; fi
mkdir -p "$OUT"
exec 9>"$OUT/lock"
flock 9
if [ -x "$OUT/helm" ]; then echo "$OUT/helm"; exit 0; fi
T0=$(date +%s)
log "building helm $VERSION (helm.sh/helm/v4/cmd/helm)"
export GOFLAGS="-buildvcs=false -mod=readonly" GOTOOLCHAIN=local
(cd "$HERE" && CGO_ENABLED=0 go build -trimpath \
    -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$VERSION" \
    -o "$OUT/helm.tmp" helm.sh/helm/v4/cmd/helm) || die "go build helm.sh/helm/v4/cmd/helm failed"
got=$("$OUT/helm.tmp" version --short) || die "the built helm does not run"
[ "$got" = "$VERSION" ] || die "the built helm reports $got, not $VERSION"
mv "$OUT/helm.tmp" "$OUT/helm"
log "built in $(( $(date +%s) - T0 )) s: $OUT/helm"
# builds of other pins are not used again: removed once a day old and free
for d in "$CACHE"/helm-*/; do
  d=${d%/}
  [ "$d" = "$OUT" ] && continue
  [ -n "$(find "$d" -maxdepth 0 -mmin +1440)" ] || continue
  if ( exec 7>>"$d/lock" && flock -n -x 7 ); then
    log "removing the outdated build $d"; rm -rf "$d"
  fi
done
echo "$OUT/helm"
