#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian packages given as arguments, only those missing.
# Idempotent: with everything present it only checks and returns.
set -eu
missing=""
for p in "$@"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done
if [ -z "$missing" ]; then
  echo "deps: all $# Debian packages present"
  exit 0
fi
echo "deps: installing:$missing"
if [ "$(id -u)" -ne 0 ]; then
  echo "deps: these packages are missing and installing them needs root:" >&2
  echo "  sudo apt-get install -y --no-install-recommends$missing" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# Packages such as prometheus (promtool for the rule tests) start their
# daemon on install; a test machine needs the tools, not the services. The
# standard policy-rc.d answer 101 ("action forbidden") keeps them stopped.
policy=""
if [ ! -e /usr/sbin/policy-rc.d ]; then
  policy=/usr/sbin/policy-rc.d
  printf '#!/bin/sh\nexit 101\n' >"$policy"
  chmod 755 "$policy"
  trap 'rm -f "$policy"' EXIT
fi
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing
