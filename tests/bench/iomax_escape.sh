#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Does a direct writer stay within io.max when its limit is raised and cut again, as lending
# does to a pod without a grant? (issue 27; docs/benchmark.md "io.max after a raise and a cut")
#
# In the cgroup v2 VM (tests/e2e/vm-run, Debian's 6.1 kernel, a virtio disk throttled by qemu
# to 200 MiB/s, ext4): a "backup" writes at its 120 MiB/s io.max, and a "pod" (its writer in a
# child cgroup "ctr", io.max on the pod, as kubelet and ioqos lay them out) writes 1 MiB direct
# I/O (4 jobs x iodepth 4) on a new file. Per trial: pod at 5 MiB/s for 3 s, raised to 40 MiB/s
# for 3 s (lent), cut to 5 MiB/s, then rewritten six times, about every 1.7 s here, between 1.25
# and 5 MiB/s (the plugin's re-splits). Prints the pod's io.stat write rate over the cut's first
# second (a reading every 0.1 s, more under a busy TCG guest), then between readings
# and what it wrote over the whole window against what its io.max allowed. A first reading (from
# the cut to the end of the first re-split's second) above 3 x the cut (15 MiB/s) is the cut
# letting it through (WRAP: blk-throttle's carried
# debt wrapped, docs/ungranted.md "io.max after a cut"); a window above 2 x is an ESCAPE (every
# rewrite while it owes lets it through again). A measurement, not a test.
#
# usage: tests/bench/iomax_escape.sh [--trials N] [--no-raise] [--iops-ceiling N] [--hold] [--cut-child]
#   --no-raise         the same trials without the raise to 40 MiB/s (the re-splits alone)
#   --hold             the plugin's rule: a re-split is not written while the pod wrote more
#                      since the last write than its io.max allows (it owes the kernel)
#   --cut-child        the cut is written on the writer's container cgroup first (its io.max was
#                      max: nothing carried), the pod's io.max only at the next write, once what
#                      was queued at the pod has gone at the raised limit; the container's limit
#                      is then raised far above the pod's and lifted (max) at the write after
#   --iops-ceiling N   write riops=N wiops=N beside the bandwidth limits (0: max). Tried as a
#                      remedy (an IOPS limit makes every trim book the carried debt): it does not
#                      stop the cut's wrap, 4 of 5 trials escaped with N = 10000000
set -euo pipefail

trials=5
raise=1
ceiling=0
hold=0
child=0
while [ $# -gt 0 ]; do
    case $1 in
        --trials) trials=$2; shift ;;
        --no-raise) raise=0 ;;
        --iops-ceiling) ceiling=$2; shift ;;
        --hold) hold=1 ;;
        --cut-child) child=1 ;;
        -h|--help) awk 'NR > 2 && /^#/ { sub(/^# ?/, ""); print; next } NR > 2 { exit }' "$0"; exit 0 ;;
        *) echo "iomax_escape.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
case $trials in ''|*[!0-9]*|0) echo "iomax_escape.sh: --trials wants a whole number > 0" >&2; exit 2 ;; esac
case $ceiling in ''|*[!0-9]*) echo "iomax_escape.sh: --iops-ceiling wants a whole number (0: none)" >&2; exit 2 ;; esac

if [ -z "${IOQOS_E2E_VM:-}" ]; then
    HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
    exec "$HERE/../e2e/vm-run" --virtio-disk "vd0:size=$((1 + trials / 3))G:bps=209715200:iops=51200:mkfs=ext4:mount=/mnt/vd0" \
        -- "$HERE/iomax_escape.sh" --trials "$trials" --iops-ceiling "$ceiling" $([ $raise = 1 ] || echo --no-raise) $([ $hold = 0 ] || echo --hold) $([ $child = 0 ] || echo --cut-child)
fi

CG=/sys/fs/cgroup
DEV=$IOQOS_E2E_DISK_VD0_DEVNO
M=/mnt/vd0
MiB=1048576
command -v fio >/dev/null || { echo "iomax_escape.sh: fio is not installed (make deps)" >&2; exit 1; }
E=$CG/ioqos-escape
mkdir -p "$E"; echo "+io +memory" > "$E/cgroup.subtree_control"
for p in pod bk; do
    mkdir -p "$E/$p"; echo "+io +memory" > "$E/$p/cgroup.subtree_control"; mkdir -p "$E/$p/ctr"
done
iops=max; [ "$ceiling" = 0 ] || iops=$ceiling
uptime_s() { cut -d' ' -f1 /proc/uptime; }
setmax() { echo "$DEV wbps=$2 rbps=$2 riops=$iops wiops=$iops" > "$E/$1/io.max"; }
fine_rates() { # the pod's MiB/s every 0.1 s for 1 s (the cut's first second)
    local b0 b t0 t out=
    b0=$(wbytes) t0=$(uptime_s)
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        sleep 0.1; b=$(wbytes) t=$(uptime_s)
        out="$out $(awk -v b="$((b - b0))" -v t="$t" -v t0="$t0" 'BEGIN { printf "%.0f", b / (t - t0) / 1048576 }')"
        b0=$b t0=$t
    done
    echo "$out"
}
wbytes() {
    awk -v d="$DEV" '$1 == d { for (i = 2; i <= NF; i++) if ($i ~ /^wbytes=/) { sub("wbytes=", "", $i); print $i } }' \
        "$E/pod/io.stat"
}
writer() { # cgroup file
    bash -c "echo \$\$ > $E/$1/ctr/cgroup.procs; exec fio --name=w --filename=$2 --size=256M --rw=write --bs=1M \
        --direct=1 --ioengine=libaio --iodepth=4 --numjobs=4 --time_based --runtime=14 --output=/dev/null" &
}
setmax bk $((120 * MiB))
escapes=0 wraps=0
for k in $(seq 1 "$trials"); do
    sync; echo 3 > /proc/sys/vm/drop_caches
    setmax pod $((5 * MiB))
    writer bk "$M/bk"; writer pod "$M/pod.$k"
    sleep 3
    if [ $raise = 1 ]; then setmax pod $((40 * MiB)); fi
    sleep 3
    series= esc=0 wrap=0 prev=$(wbytes) first=$(wbytes) allowed=0 held=0 tprev=$(uptime_s)
    wr_t=$tprev wr_b=$first lim=$((5 * MiB))
    if [ $raise = 1 ] && [ $child = 1 ]; then setmax pod/ctr $lim; elif [ $raise = 1 ]; then setmax pod $lim; fi
    fine=$(fine_rates)
    for i in 1 2 3 4 5 6; do
        want=$(( i % 2 ? 5 * MiB / 4 : 5 * MiB )) mark=
        if [ $hold = 1 ] && ! { [ $child = 1 ] && [ $i = 1 ]; }; then
            # (with --cut-child the first write is the pod's own cut: its io.max is still the
            # raised one, which it cannot be ahead of by more than a slice of the raised limit)
            # what it wrote since the last write against what its io.max allowed: entered at
            # 0.25 s and 4 MiB over, left once within 0.1 s and 1 MiB (a slice ahead and a bio)
            held=$(awk -v b="$(( $(wbytes) - wr_b ))" -v t="$(uptime_s)" -v t0="$wr_t" -v l="$lim" -v h="$held" \
                'BEGIN { dt = t - t0; if (h) print (b > l * (dt + 0.1) + 1048576) ? 1 : 0;
                         else print (b > l * (dt + 0.25) + 4194304) ? 1 : 0 }')
        fi
        # the record is taken before the write, as the plugin does: a write that lets the pod
        # through does so at once, for one slice
        if [ $held = 1 ]; then mark=H; else lim=$want; wr_t=$(uptime_s) wr_b=$(wbytes); setmax pod $lim; fi
        if [ $child = 1 ] && [ $i = 1 ]; then setmax pod/ctr $((400 * MiB)); fi
        if [ $child = 1 ] && [ $i = 2 ]; then echo "$DEV wbps=max rbps=max riops=max wiops=max" > "$E/pod/ctr/io.max"; fi
        sleep 1
        now=$(wbytes) t=$(uptime_s)
        # MiB/s over the time since the last reading (the loop's own work included)
        read -r r allowed < <(awk -v b="$((now - prev))" -v t="$t" -v t0="$tprev" -v l="$lim" -v a="$allowed" \
            'BEGIN { dt = t - t0; printf "%.1f %.0f\n", b / dt / 1048576, a + l * dt }')
        prev=$now tprev=$t
        series="$series $r/$(awk -v l="$lim" 'BEGIN { printf "%g", l / 1048576 }')$mark"
        # the first reading spans the cut to 5 MiB/s and the first re-split: judged against the cut
        [ $i != 1 ] || [ "$(awk -v r="$r" 'BEGIN { print (r > 15) }')" = 0 ] || wrap=1
    done
    read -r total esc < <(awk -v b="$((now - first))" -v a="$allowed" 'BEGIN { printf "%.2f %d\n", b / a, (b > 2 * a) }')
    escapes=$((escapes + esc)) wraps=$((wraps + wrap))
    echo "trial $k: the cut's first second, MiB/s every 0.1 s:$fine"
    echo "trial $k: MiB/s written after the cut / its io.max (MiB/s, H: held):$series; written / allowed $total$([ $wrap = 1 ] && echo '  WRAP')$([ $esc = 1 ] && echo '  ESCAPE')"
    wait
done
echo "cuts let through: $wraps, escapes: $escapes of $trials trials ($([ $raise = 1 ] && echo 'raised to 40 MiB/s, then cut' || echo 'no raise')$([ $hold = 0 ] || echo ', held while it owes')$([ $child = 0 ] || echo ', cut on the container first'))"
