#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runtime closure of the ioqos binaries: every shared library they load must
# come from a Debian package the image's final stage installs.
#
#   check-closure.sh --installed BIN...
#       Inside the image (scripts/image/build.sh runs it there): `ldd` must
#       resolve every library, and each one must be owned by an installed
#       package (nothing copied in by hand).
#   check-closure.sh --containerfile FILE BIN...
#       On the build machine, without building the image: the package owning
#       each library (dpkg -S here) must be in the dependency closure
#       (Depends + Pre-Depends, recursively, from dpkg's database here) of the
#       packages the final stage of FILE installs with apt-get install.
#       The build machine is Debian 12 like the image, so the packages match.
#
# Prints one line per library: binary, library, owning package. Exit status:
# 0 closure complete, 1 something is missing (each problem is printed), 2 usage.
set -eu

usage() { sed -n '3,18p' "$0" >&2; exit 2; }
[ $# -ge 2 ] || usage
mode=$1; shift
case "$mode" in
  --installed) ;;
  --containerfile) cfile=$1; shift; [ -f "$cfile" ] || { echo "closure: no file $cfile" >&2; exit 2; } ;;
  *) usage ;;
esac
[ $# -ge 1 ] || usage
command -v ldd >/dev/null && command -v dpkg >/dev/null ||
  { echo "closure: needs ldd and dpkg (a Debian system)" >&2; exit 2; }

problems=0
problem() { echo "closure: PROBLEM: $*"; problems=$((problems + 1)); }

# Owning package of a library path, from dpkg's file lists (the same answer
# as dpkg -S, one grep for all spellings). Debian 12 is usr-merged, but dpkg
# knows many libraries by their pre-merge path (/lib/... vs /usr/lib/...).
owner() {
  _lib=$1
  set --
  for cand in "$_lib" "$(readlink -f "$_lib" 2>/dev/null || true)"; do
    [ -n "$cand" ] || continue
    set -- "$@" -e "$cand"
    case "$cand" in
      /usr/lib/*) set -- "$@" -e "${cand#/usr}" ;;
      /lib/*|/lib64/*) set -- "$@" -e "/usr$cand" ;;
      /usr/lib64/*) set -- "$@" -e "${cand#/usr}" ;;
    esac
  done
  o=$(grep -l -x -F "$@" /var/lib/dpkg/info/*.list 2>/dev/null | head -n 1 |
      sed -e 's#.*/##' -e 's#\.list$##' -e 's#:.*##')
  [ -n "$o" ] && echo "$o"
}

# The packages the final stage installs: the words after `apt-get install`
# in the RUN instructions after the last FROM (options and line breaks dropped).
final_stage_packages() {
  awk '
    /^[[:space:]]*FROM[[:space:]]/ { stage = ""; next }
    { stage = stage "\n" $0 }
    END { print stage }' "$1" |
    sed -e 's/\\$//' | tr '\n' ' ' |
    sed -e 's/&&/\n/g' -e 's/;/\n/g' |
    sed -n 's/.*apt-get[[:space:]][[:space:]]*install[[:space:]]\(.*\)/\1/p' |
    tr ' ' '\n' | grep -v '^-' | grep -v '^$' | sort -u
}

# Installed packages reachable from the arguments through Depends/Pre-Depends
# (one dpkg-query for the whole database; for alternatives "a | b" every
# installed one counts). Prints " pkg1 pkg2 ... ".
closure_of() {
  dpkg-query -W -f='${Package}\t${db:Status-Abbrev}\t${Depends}, ${Pre-Depends}\n' 2>/dev/null |
    awk -F'\t' -v roots="$*" '
      $2 ~ /^ii/ { inst[$1] = 1; deps[$1] = $3 }
      END {
        n = split(roots, todo, " ")
        while (n > 0) {
          p = todo[n--]
          if (p in seen || !(p in inst)) continue
          seen[p] = 1
          m = split(deps[p], d, /[,|]/)
          for (i = 1; i <= m; i++) {
            x = d[i]
            sub(/\(.*\)/, "", x); sub(/:any/, "", x); gsub(/[ \t]/, "", x)
            if (x != "" && (x in inst) && !(x in seen)) todo[++n] = x
          }
        }
        printf " "
        for (p in seen) printf "%s ", p
        print ""
      }'
}

if [ "$mode" = --containerfile ]; then
  pkgs=$(final_stage_packages "$cfile")
  [ -n "$pkgs" ] || { echo "closure: no apt-get install in the final stage of $cfile" >&2; exit 1; }
  echo "closure: final stage of $cfile installs: $(echo $pkgs)"
  for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
      problem "package $p (final stage) is not installed on this machine, cannot compute its closure"
  done
  allowed=$(closure_of $pkgs)
  echo "closure: with their dependencies: $(echo "$allowed" | wc -w) packages"
fi

nlibs=0
owners=""
for bin in "$@"; do
  [ -x "$bin" ] || { problem "$bin: not an executable"; continue; }
  out=$(ldd "$bin" 2>&1) || { problem "$bin: ldd failed: $out"; continue; }
  libs=$(echo "$out" | awk '
    / => not found/ { print "NOTFOUND:" $1; next }
    $2 == "=>" && $3 ~ /^\// { print $3; next }
    $1 ~ /^\// { print $1 }')
  for lib in $libs; do
    case "$lib" in
      NOTFOUND:*) problem "$bin: ${lib#NOTFOUND:} not found by the dynamic loader"; continue ;;
    esac
    nlibs=$((nlibs + 1))
    # each library is looked up once
    pkg=$(printf '%s' "$owners" | awk -v l="$lib" '$1 == l { print $2; exit }')
    if [ -z "$pkg" ]; then
      pkg=$(owner "$lib") || { problem "$bin: $lib belongs to no Debian package"; continue; }
      owners="$owners$lib $pkg
"
    fi
    if [ "$mode" = --containerfile ]; then
      case "$allowed" in
        *" $pkg "*) echo "  $(basename "$bin"): $lib <- $pkg" ;;
        *) problem "$bin: $lib comes from $pkg, which the final stage does not install (add it to the Containerfile)" ;;
      esac
    else
      echo "  $(basename "$bin"): $lib <- $pkg"
    fi
  done
done

if [ "$problems" -gt 0 ]; then
  echo "closure: $problems problem(s)"
  exit 1
fi
echo "closure: complete: $nlibs libraries of $# binaries, all from packages the image installs"
