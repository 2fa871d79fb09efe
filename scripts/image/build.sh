#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Builds the ioqos image from the Containerfile with Debian-packaged tools and
# no container registry, then checks the result from inside the image.
#
#   scripts/image/build.sh [--save FILE] [--binaries "LIST"]
#
#   1. scripts/image/bootstrap-base.sh: Debian 12 minbase via debootstrap from
#      the Debian mirror, imported as localhost/ioqos-base:bookworm
#   2. buildah bud with chroot isolation (no container runtime or namespaces
#      needed) -> localhost/ioqos:VERSION; STORAGE_DRIVER=vfs where overlayfs
#      is not available
#   3. inside the image: every binary runs --help, `ldd` finds every library,
#      and dpkg says which installed package provides each one
#   4. --save FILE: an image archive to load on nodes without a registry:
#      `ctr -n k8s.io images import FILE` (containerd), `podman load -i FILE`
#      (CRI-O), `kind load image-archive FILE`
#
# --binaries overrides the Containerfile's list of binaries that must exist
# (default: all three); only for trying the image while a component is missing.
#
# Needs root and the Debian packages buildah and debootstrap.
set -eu
cd "$(dirname "$0")/../.."

SAVE=""
BINARIES=""
while [ $# -gt 0 ]; do
  case "$1" in
    --save) SAVE=$2; shift 2 ;;
    --binaries) BINARIES=$2; shift 2 ;;
    -h|--help) sed -n '3,21p' "$0"; exit 0 ;;
    *) echo "build.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

# buildah with the storage driver of STORAGE_DRIVER when set (vfs where
# overlayfs is not available, e.g. inside another container), else the
# system's default (/etc/containers/storage.conf)
bah() {
  if [ -n "${STORAGE_DRIVER:-}" ]; then buildah --storage-driver "$STORAGE_DRIVER" "$@"; else buildah "$@"; fi
}
die() { echo "image: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (buildah with chroot isolation)"
for t in buildah debootstrap; do
  command -v "$t" >/dev/null || die "$t missing: apt-get install buildah debootstrap"
done
export BUILDAH_ISOLATION=${BUILDAH_ISOLATION:-chroot}

VERSION=$(sed -n 's/^project(ioqos VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
[ -n "$VERSION" ] || die "cannot read the version from CMakeLists.txt"
BASE=localhost/ioqos-base:bookworm
IMAGE=localhost/ioqos:$VERSION

scripts/image/bootstrap-base.sh "$BASE"

echo "image: building $IMAGE (storage ${STORAGE_DRIVER:-default}, isolation $BUILDAH_ISOLATION)"
set -- --build-arg BASE_IMAGE="$BASE" --build-arg VERSION="$VERSION"
[ -n "$BINARIES" ] && set -- "$@" --build-arg BINARIES="$BINARIES"
# --pull-never: the base comes from local storage, never a registry
bah bud --layers --pull=never "$@" -t "$IMAGE" -f Containerfile .

echo "image: checking $IMAGE from the inside"
ctr=$(bah from --pull=never "$IMAGE")
trap 'bah rm "$ctr" >/dev/null 2>&1 || true' EXIT INT TERM
bah copy "$ctr" scripts/image/check-closure.sh /tmp/check-closure.sh >/dev/null
# shellcheck disable=SC2016
bah run "$ctr" -- sh -c 'set -e
  bins=$(ls /usr/local/bin/)
  for b in $bins; do /usr/local/bin/$b --help >/dev/null; echo "image: $b --help ok"; done
  sh /tmp/check-closure.sh --installed $(for b in $bins; do echo /usr/local/bin/$b; done)
  rm -f /tmp/check-closure.sh
  # the node probe runs against this machine (exit 0 probed, 1 nothing enforceable here)
  rc=0; /usr/local/bin/ioqosctl probe >/tmp/probe.txt 2>&1 || rc=$?
  sed -n "1,3p" /tmp/probe.txt; rm -f /tmp/probe.txt
  [ "$rc" -le 1 ] || { echo "image: ioqosctl probe exited $rc"; exit 1; }'

# The extender serves from the image: start it (host network, chroot
# isolation) and ask /healthz and /metrics from here.
if command -v curl >/dev/null; then
  port=18931
  # buildah itself in the background (not a subshell), so killing $! stops
  # buildah run, which stops the extender
  set -- run "$ctr" -- /usr/local/bin/ioqos-scheduler-ext --no-kube --listen "127.0.0.1:$port"
  [ -n "${STORAGE_DRIVER:-}" ] && set -- --storage-driver "$STORAGE_DRIVER" "$@"
  buildah "$@" >/tmp/ioqos-image-ext.log 2>&1 &
  runpid=$!
  up=""
  for _ in $(seq 50); do
    if curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1; then up=1; break; fi
    sleep 0.2
  done
  metrics=$(curl -fsS "http://127.0.0.1:$port/metrics" 2>/dev/null | grep -c '^ioqos_extender_' || true)
  kill "$runpid" 2>/dev/null || true
  wait "$runpid" 2>/dev/null || true
  [ -n "$up" ] || { cat /tmp/ioqos-image-ext.log >&2; die "ioqos-scheduler-ext from the image did not answer /healthz"; }
  echo "image: ioqos-scheduler-ext serves /healthz and /metrics ($metrics samples) from the image"
fi

bah images --noheading --format '{{.Name}}:{{.Tag}} {{.ID}} {{.Size}}' "$IMAGE"
if [ -n "$SAVE" ]; then
  rm -f "$SAVE"
  # docker-archive: what ctr import, podman load, docker load and kind load all take
  bah push --quiet "$IMAGE" "docker-archive:$SAVE:$IMAGE"
  echo "image: saved to $SAVE ($(du -h "$SAVE" | cut -f1))"
fi
echo "image: $IMAGE built and checked"
