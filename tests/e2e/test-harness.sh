#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# e2e harness test (runs on the host): exit status propagation, stdout/stderr separation,
# environment and working directory, read-write sharing of the working directory, usage
# errors, timeout, kernel panic and soft-lockup handling, no qemu left behind.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
if [ "${IOQOS_E2E_SKIP:-0}" = 1 ]; then echo "SKIP: IOQOS_E2E_SKIP=1"; exit 77; fi

VMRUN=$E2E_DIR/vm-run
WORK=$(mktemp -d "$(pwd -P)/e2e-harness.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
cd "$WORK" || exit 1
MARK=ioqos.testmark=$$-$RANDOM

# 1. one boot: status, streams, env, cwd, RW share, a file in the VM's /tmp stays there.
export IOQOS_TEST_VAR="a b 'c' \$d"
"$VMRUN" --timing --append "$MARK" -e EXTRA_VAR=xyz -- sh -c '
    echo "out-marker"; echo "err-marker" >&2
    echo "cwd=$(pwd)"; echo "var=$IOQOS_TEST_VAR"; echo "extra=$EXTRA_VAR"; echo "vm=$IOQOS_E2E_VM"
    echo "written in the VM" > from-vm.txt
    echo tmp > /tmp/only-in-vm-'$$'
    exit 3' > out.txt 2> err.txt
rc=$?
check_eq "exit status of the command is propagated" 3 "$rc"
check "stdout carries the command's stdout" grep -qx out-marker out.txt
check "stderr carries the command's stderr" grep -qx err-marker err.txt
check "stdout has no stderr lines" sh -c '! grep -q err-marker out.txt'
check "stderr has no stdout lines" sh -c '! grep -q out-marker err.txt'
check "no kernel messages on stdout" sh -c '! grep -qE "^\[ *[0-9]+\.[0-9]+\]|Linux version|SeaBIOS" out.txt'
check_eq "same working directory" "cwd=$WORK" "$(grep '^cwd=' out.txt)"
check_eq "IOQOS_* variables are passed verbatim" "var=$IOQOS_TEST_VAR" "$(grep '^var=' out.txt)"
check_eq "--env passes a variable" "extra=xyz" "$(grep '^extra=' out.txt)"
check_eq "IOQOS_E2E_VM is set inside" "vm=1" "$(grep '^vm=' out.txt)"
check "a file written in the working directory reaches the host" grep -qx "written in the VM" from-vm.txt
check "the VM's /tmp is its own" test ! -e /tmp/only-in-vm-$$
boot=$(sed -n 's/.*timing: boot \([0-9.?]*\)s.*/\1/p' err.txt)
check "--timing reports the boot time" test -n "$boot"
info "boot time: ${boot:-?}s; $(grep timing: err.txt)"

# 2. a failing command's output is shown and its status returned.
"$VMRUN" -- sh -c 'echo "something went wrong" >&2; ls /nonexistent-path; exit 1' > out.txt 2> err.txt
rc=$?
check_eq "failing command: status 1" 1 "$rc"
check "failing command: its stderr is shown" grep -q "something went wrong" err.txt
check "failing command: its tool errors are shown" grep -q "nonexistent-path" err.txt

# 2b. --net: the guest reaches the host's loopback at 10.0.2.2 and nothing else
# (no default route); a one-shot HTTP server on the host's loopback answers.
python3 -m http.server 0 --bind 127.0.0.1 --directory "$WORK" > http.log 2>&1 &
HTTP=$!
port=""
for _ in $(seq 50); do
    port=$(sed -n 's/.*port \([0-9]*\).*/\1/p' http.log | head -n1)
    [ -n "$port" ] && break
    sleep 0.1
done
echo "from the host" > served.txt
"$VMRUN" --net -- sh -c "ip -4 addr show eth0; ip route; curl -s --max-time 10 http://10.0.2.2:$port/served.txt" \
    > out.txt 2> err.txt
rc=$?
kill "$HTTP" 2>/dev/null
check_eq "--net: command status" 0 "$rc"
check "--net: eth0 is 10.0.2.15/24" grep -q "inet 10.0.2.15/24" out.txt
check "--net: no default route" sh -c '! grep -q "^default" out.txt'
check "--net: the host's loopback answers at 10.0.2.2" grep -qx "from the host" out.txt

# 3. usage errors.
"$VMRUN" --no-such-option -- true > /dev/null 2>&1
check_eq "unknown option gives 2" 2 $?
"$VMRUN" > /dev/null 2>&1
check_eq "missing command gives 2" 2 $?
"$VMRUN" --nullb 'bad name:mbps=1' -- true > /dev/null 2>&1
check_eq "bad disk spec gives 2" 2 $?
"$VMRUN" --help | grep -q -- '--virtio-disk'
check "--help documents the options" test $? = 0

# 4. timeout.
start=$(date +%s)
"$VMRUN" --timeout 8 --append "$MARK" -- sleep 300 > out.txt 2> err.txt
rc=$?
took=$(( $(date +%s) - start ))
check_eq "timeout gives 243" 243 "$rc"
check "timeout message names the console log" grep -q 'timeout after 8s.*full console log' err.txt
check_range "timeout is enforced promptly (s)" "$took" 8 30

# 5. kernel panic.
"$VMRUN" --append "$MARK" -- sh -c 'echo c > /proc/sysrq-trigger; sleep 30' > out.txt 2> err.txt
rc=$?
check_eq "kernel panic gives 242" 242 "$rc"
check "panic report shows the console tail" grep -q 'Kernel panic' err.txt
log=$(sed -n 's/.*full console log: //p' err.txt)
check "the full console log is kept" test -s "$log"
[ -n "$log" ] && rm -f "$log"

# 5b. a guest kernel that locks up: the soft-lockup report on the console ends the VM at once
# (a report written through /dev/kmsg at emergency level stands in for a real lockup).
start=$(date +%s)
"$VMRUN" --lockup 100 --timeout 300 --append "$MARK" -- sh -c \
  'echo "<0>watchdog: BUG: soft lockup - CPU#1 stuck for 123s! [test:1]" > /dev/kmsg; sleep 300' \
  > out.txt 2> err.txt
rc=$?
took=$(( $(date +%s) - start ))
check_eq "a soft lockup gives 244" 244 "$rc"
check "the lockup is named" grep -q 'locked up (soft lockup for 123s, --lockup 100)' err.txt
check_range "the locked-up VM is stopped promptly, not at the timeout (s)" "$took" 1 60
log=$(sed -n 's/.*full console log: //p' err.txt)
[ -n "$log" ] && rm -f "$log"
"$VMRUN" --lockup 200 --append "$MARK" -- sh -c \
  'echo "<0>watchdog: BUG: soft lockup - CPU#1 stuck for 123s! [test:1]" > /dev/kmsg; sleep 7; echo done' \
  > out.txt 2> err.txt
rc=$?
check_eq "a shorter soft lockup than --lockup is left alone" 0 "$rc"

# 6. no qemu of ours is left running.
sleep 0.5
check "no qemu left running" sh -c "! pgrep -f '[q]emu-system.*$MARK' >/dev/null"

e2e_summary
