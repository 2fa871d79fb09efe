# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Reading fio's JSON and comparing rates: one copy for the host kernel tests
# (tests/kernel) and the VM tests (tests/e2e). Sourced; needs PY set.

# fio_val JSON_FILE read|write [bw_bytes|iops] -> number (sum over jobs)
fio_val() {
    "$PY" - "$1" "$2" "${3:-bw_bytes}" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
print(sum(j[sys.argv[2]][sys.argv[3]] for j in d["jobs"]))
PYEOF
}

# ratio A B -> A/B with 3 decimals (0 when B is 0)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }'; }

# in_range V LO HI -> status 0 when LO <= V <= HI
in_range() { awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v >= lo && v <= hi) }'; }
