#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Builds the upstream components of the test cluster from their published Go
# modules (pinned in tests/cluster/gomod/*/go.mod + go.sum) into a per-machine
# cache keyed by everything that shapes the binaries. Prints the bin dir.
#
#   tests/cluster/build-components.sh [--print-dir] [-q]
#
# --print-dir   print the cache dir the current pins map to, build nothing
#
# Cache: $IOQOS_CLUSTER_CACHE (default /var/cache/ioqos-cluster)/<key>/bin;
# whoever uses a build holds a shared flock on <key>/lock meanwhile (run.sh),
# so that removing outdated builds never pulls one from under a running test.
# A second run with the same pins, Go and this script finds the stamp and
# builds nothing. No binary is downloaded: only Go modules, through the Go
# module proxy, checked against go.sum.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${IOQOS_CLUSTER_CACHE:-/var/cache/ioqos-cluster}
PRINT_DIR=0 QUIET=0
for a in "$@"; do
  case "$a" in
    --print-dir) PRINT_DIR=1 ;;
    -q) QUIET=1 ;;
    -h|--help) sed -n '3,15p' "$0"; exit 0 ;;
    *) echo "build-components: unknown argument $a" >&2; exit 2 ;;
  esac
done
log() { [ "$QUIET" = 1 ] || echo "build-components: $*" >&2; }
die() { echo "build-components: $*" >&2; exit 1; }

# Go is on the machine image (/usr/local/go); not always on a non-login PATH
command -v go >/dev/null || PATH=$PATH:/usr/local/go/bin
command -v go >/dev/null || die "go not found (Go 1.26 is needed to build the test cluster; install it or set PATH)"
# Go keeps its module and build caches under HOME
[ -n "${HOME:-}" ] || export HOME=/root
KUBE_VERSION=v1.37.2
GOVER=$(go env GOVERSION)
KEY=$( { echo "$GOVER"; cat "$0"; cat "$HERE"/gomod/*/go.mod "$HERE"/gomod/*/go.sum "$HERE"/gomod/*/*.go; } | sha256sum | cut -c1-16)
OUT=$CACHE/$KUBE_VERSION-$KEY
if [ "$PRINT_DIR" = 1 ]; then echo "$OUT/bin"; exit 0; fi
if [ -f "$OUT/stamp" ]; then log "cached: $OUT/bin"; echo "$OUT/bin"; exit 0; fi
mkdir -p "$OUT/bin"
exec 9>"$OUT/lock"
flock 9
if [ -f "$OUT/stamp" ]; then echo "$OUT/bin"; exit 0; fi

export GOFLAGS="-buildvcs=false -mod=readonly" GOTOOLCHAIN=local
T0=$(date +%s)
# Kubernetes: version ldflags as upstream's hack/lib/version.sh sets them, so
# Nodes and /version report v1.37.2 instead of v0.0.0-master.
MAJ=${KUBE_VERSION#v}; MIN=${MAJ#*.}; MIN=${MIN%%.*}; MAJ=${MAJ%%.*}
LDF="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  LDF+=" -X $p.gitVersion=$KUBE_VERSION -X $p.gitMajor=$MAJ -X $p.gitMinor=$MIN"
  LDF+=" -X $p.gitTreeState=clean -X $p.buildDate=2026-01-01T00:00:00Z -X $p.gitCommit=$KUBE_VERSION"
done
build_k8s() {
  local bin=$1 pkg=$2
  [ -x "$OUT/bin/$bin" ] && return 0
  log "building bin/$bin ($pkg)"
  (cd "$HERE/gomod/kubernetes" && CGO_ENABLED=0 go build -trimpath -tags selinux,notest,grpcnotrace \
      -ldflags "$LDF" -o "$OUT/bin/$bin.tmp" "$pkg") || die "go build $pkg failed"
  mv "$OUT/bin/$bin.tmp" "$OUT/bin/$bin"
}
build_k8s etcd go.etcd.io/etcd/server/v3
for c in kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl kube-proxy; do
  build_k8s "$c" "k8s.io/kubernetes/cmd/$c"
done

# Node: containerd 2.x (kubelet 1.37 needs the CRI RuntimeConfig call),
# its runc shim and ctr (image import); static like upstream's release.
build_mod() {  # module-dir output pkg [cgo] [tags]
  local dir=$1 out=$2 pkg=$3 cgo=${4:-0} tags=${5:-}
  [ -x "$out" ] && return 0
  log "building ${out#"$OUT"/} ($pkg)"
  (cd "$HERE/gomod/$dir" && CGO_ENABLED=$cgo go build -trimpath ${tags:+-tags "$tags"} \
      -ldflags "-s -w" -o "$out.tmp" "$pkg") || die "go build $pkg failed"
  mv "$out.tmp" "$out"
}
for c in containerd containerd-shim-runc-v2 ctr; do
  build_mod containerd "$OUT/bin/$c" "github.com/containerd/containerd/v2/cmd/$c" 0 "no_btrfs,no_devmapper,no_zfs"
done
# runc needs cgo (its nsenter is C) and libseccomp for RuntimeDefault profiles
# (the ioqos manifests ask for them); the VM uses the host's libseccomp2.
pkg-config --exists libseccomp || die "libseccomp-dev is not installed (make deps)"
build_mod runc "$OUT/bin/runc" github.com/opencontainers/runc 1 "seccomp,urfave_cli_no_docs"
mkdir -p "$OUT/cni"
for p in main/bridge main/loopback ipam/host-local meta/portmap; do
  build_mod runc "$OUT/cni/${p#*/}" "github.com/containernetworking/plugins/plugins/$p"
done
build_mod coredns "$OUT/bin/coredns" ioqos.test/cluster/coredns
# The sandbox ("pause") image's binary, from the same Kubernetes release:
# static C, as build/pause/Makefile builds it.
if [ ! -x "$OUT/bin/pause" ]; then
  src=$(cd "$HERE/gomod/kubernetes" && go list -m -f '{{.Dir}}' k8s.io/kubernetes)/build/pause/linux/pause.c
  [ -f "$src" ] || die "pause.c not found in the k8s.io/kubernetes module ($src)"
  cc -Os -Wall -Werror -static -DVERSION=v3.10.2-ioqos -o "$OUT/bin/pause.tmp" "$src" || die "cc pause.c failed"
  mv "$OUT/bin/pause.tmp" "$OUT/bin/pause"
fi
log "built in $(( $(date +%s) - T0 )) s"
touch "$OUT/stamp"
# Older builds (other pins, Go or recipe) are not used again (~0.6 GB each):
# removed once a day old; one still in use holds a shared lock on its lock
# file (run.sh does), so it stays until a later build finds it free.
for d in "$CACHE"/v*-*/; do
  d=${d%/}
  [ "$d" = "$OUT" ] && continue
  [ -n "$(find "$d" -maxdepth 0 -mmin +1440)" ] || continue
  if ( exec 7>>"$d/lock" && flock -n -x 7 ); then
    log "removing the outdated build $d"; rm -rf "$d"
  fi
done
echo "$OUT/bin"
