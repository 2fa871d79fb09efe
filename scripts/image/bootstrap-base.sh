#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Builds the Debian 12 base image the Containerfile starts from, without any
# container registry: debootstrap (minbase) from the Debian mirror, then
# imported into local container storage with buildah.
#
#   scripts/image/bootstrap-base.sh [IMAGE_NAME]   (default localhost/ioqos-base:bookworm)
#
# Environment:
#   DEBIAN_MIRROR    default http://deb.debian.org/debian
#   STORAGE_DRIVER   buildah storage driver (default: the system's; vfs works without overlayfs)
#   KEEP_ROOTFS=1    keep the bootstrapped directory (printed) for inspection
#   REBUILD_BASE=1   bootstrap again even if IMAGE_NAME is already in local storage
#
# Needs root and the Debian packages debootstrap and buildah.
set -eu

IMAGE=${1:-localhost/ioqos-base:bookworm}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

# buildah with the storage driver of STORAGE_DRIVER when set (vfs where
# overlayfs is not available, e.g. inside another container), else the
# system's default (/etc/containers/storage.conf)
bah() {
  if [ -n "${STORAGE_DRIVER:-}" ]; then buildah --storage-driver "$STORAGE_DRIVER" "$@"; else buildah "$@"; fi
}
die() { echo "bootstrap-base: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap creates device nodes and chowns files)"
command -v debootstrap >/dev/null || die "debootstrap missing: apt-get install debootstrap"
command -v buildah >/dev/null || die "buildah missing: apt-get install buildah"

if [ "${REBUILD_BASE:-0}" = 1 ]; then
  bah rmi "$IMAGE" >/dev/null 2>&1 || true
fi
if bah images --quiet "$IMAGE" >/dev/null 2>&1; then
  echo "bootstrap-base: $IMAGE already in local storage ($(bah images --noheading --format '{{.ID}}' "$IMAGE"))"
  exit 0
fi

rootfs=$(mktemp -d /var/tmp/ioqos-rootfs.XXXXXX)
ctr=""
cleanup() {
  [ -n "$ctr" ] && bah rm "$ctr" >/dev/null 2>&1 || true
  if [ "${KEEP_ROOTFS:-0}" = 1 ]; then echo "bootstrap-base: rootfs kept in $rootfs"; else rm -rf "$rootfs"; fi
}
trap cleanup EXIT INT TERM

echo "bootstrap-base: debootstrap --variant=minbase bookworm from $MIRROR"
debootstrap --variant=minbase --components=main bookworm "$rootfs" "$MIRROR" >"$rootfs.log" 2>&1 ||
  { tail -20 "$rootfs.log" >&2; die "debootstrap failed (full log: $rootfs.log)"; }
rm -f "$rootfs.log"

# The same apt sources and container-friendly settings as Debian's official
# slim image: no docs/man pages/locales, no apt caches kept.
cat >"$rootfs/etc/apt/sources.list" <<EOF
deb $MIRROR bookworm main
deb $MIRROR bookworm-updates main
deb ${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security} bookworm-security main
EOF
cat >"$rootfs/etc/dpkg/dpkg.cfg.d/container" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
EOF
cat >"$rootfs/etc/apt/apt.conf.d/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache ""; Dir::Cache::srcpkgcache "";
EOF
echo 'APT::Install-Recommends "false";' >"$rootfs/etc/apt/apt.conf.d/99no-recommends"
# debootstrap installs bookworm as released: add the point and security updates
cp /etc/resolv.conf "$rootfs/etc/resolv.conf" 2>/dev/null || true
chroot "$rootfs" sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get -y -qq upgrade' \
  >"$rootfs.log" 2>&1 || { tail -20 "$rootfs.log" >&2; die "apt-get upgrade in the new rootfs failed"; }
rm -f "$rootfs.log"
rm -rf "$rootfs/var/cache/apt/archives/"*.deb "$rootfs/var/lib/apt/lists/"* \
  "$rootfs/usr/share/man" "$rootfs/usr/share/locale" 2>/dev/null || true
# documentation goes, the copyright files stay
find "$rootfs/usr/share/doc" -depth \( -type f -o -type l \) ! -name copyright -delete 2>/dev/null || true
find "$rootfs/usr/share/doc" -depth -type d -empty -delete 2>/dev/null || true
mkdir -p "$rootfs/var/lib/apt/lists/partial"
: >"$rootfs/etc/hostname"
: >"$rootfs/etc/resolv.conf"

echo "bootstrap-base: importing into local storage as $IMAGE (storage driver ${STORAGE_DRIVER:-default})"
ctr=$(bah from scratch)
mnt=$(bah mount "$ctr")
# tar keeps owners, modes, device nodes and hard links exactly
(cd "$rootfs" && tar -cf - --numeric-owner --xattrs .) | (cd "$mnt" && tar -xf - --numeric-owner --xattrs)
bah umount "$ctr" >/dev/null
bah config --os linux --arch "$(dpkg --print-architecture)" --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --cmd /bin/bash --label org.opencontainers.image.description="Debian 12 minbase, bootstrapped locally" "$ctr"
bah commit --quiet "$ctr" "$IMAGE" >/dev/null
echo "bootstrap-base: done: $(bah images --noheading --format '{{.Name}}:{{.Tag}} {{.ID}} {{.Size}}' "$IMAGE")"
