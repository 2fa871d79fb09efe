#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The test cluster's images, as archives for `ctr -n k8s.io images import`
# (no registry anywhere): made by mkimage.py from binaries of this machine.
#
#   tests/cluster/images.sh BUILD_DIR COMPONENTS_BIN OUT_DIR
#
#   pause.tar           registry.k8s.io/pause:3.10.2 (containerd's pinned sandbox
#                       image; pause.c of the Kubernetes release)
#   kube-scheduler.tar  registry.k8s.io/kube-scheduler:v1.37.2 (the second
#                       scheduler of overlays/second-scheduler)
#   ioqos.tar           localhost/ioqos:VERSION: ioqos-plugin, ioqos-scheduler-ext,
#                       ioqosctl (+ kubectl-ioqos) from BUILD_DIR, with the
#                       shared libraries they load
#   tools.tar           localhost/ioqos-test-tools:1: busybox (sh, dd with
#                       oflag=direct, sleep) for the scenario workloads; 1 MB,
#                       so the node imports it in a second even under TCG
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[ $# -eq 3 ] || { echo "usage: images.sh BUILD_DIR COMPONENTS_BIN OUT_DIR" >&2; exit 2; }
BUILD=$1 BIN=$2 OUT=$3
die() { echo "images: $*" >&2; exit 1; }
VERSION=$(sed -n 's/^project(ioqos VERSION \([0-9.]*\).*/\1/p' "$HERE/../../CMakeLists.txt")
[ -n "$VERSION" ] || die "cannot read the version from CMakeLists.txt"
mkdir -p "$OUT"
find_bin() {
  local f
  f=$(find "$BUILD" -type f -name "$1" -perm -u+x -not -path '*/CMakeFiles/*' | head -n 1)
  [ -n "$f" ] || die "$1 not found under $BUILD (build first)"
  echo "$f"
}
MK=$HERE/mkimage.py
"$MK" "$OUT/pause.tar" --name registry.k8s.io/pause:3.10.2 --bin "$BIN/pause:/pause" \
  --entrypoint '["/pause"]' --user 65535:65535 >/dev/null
"$MK" "$OUT/kube-scheduler.tar" --name registry.k8s.io/kube-scheduler:v1.37.2 \
  --bin "$BIN/kube-scheduler:/usr/local/bin/kube-scheduler" --dir /tmp:1777 >/dev/null
"$MK" "$OUT/ioqos.tar" --name "localhost/ioqos:$VERSION" \
  --bin "$(find_bin ioqos-plugin):/usr/local/bin/ioqos-plugin" \
  --bin "$(find_bin ioqos-scheduler-ext):/usr/local/bin/ioqos-scheduler-ext" \
  --bin "$(find_bin ioqosctl):/usr/local/bin/ioqosctl" \
  --link ioqosctl:/usr/local/bin/kubectl-ioqos \
  --file /etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt \
  --dir /tmp:1777 --cmd '["/usr/local/bin/ioqosctl","--help"]' >/dev/null
BB=/bin/busybox
[ -x "$BB" ] || die "busybox-static is not installed"
args=(--bin "$BB:/bin/busybox" --dir /tmp:1777)
for a in sh cat sleep dd ls mkdir rm sync echo test grep sed awk head tail wc date stat true; do
  args+=(--link "busybox:/bin/$a")
done
"$MK" "$OUT/tools.tar" --name localhost/ioqos-test-tools:1 "${args[@]}" --cmd '["/bin/sh"]' >/dev/null
echo "$OUT"
