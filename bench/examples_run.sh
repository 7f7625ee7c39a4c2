#!/usr/bin/env bash
# The ported pytorch/examples programs' training steps, nnrepl and PyTorch on the same GPU in
# one run, and the ratio nnrepl / PyTorch (below 1: nnrepl is faster).
#   bash bench/examples_run.sh NNREPL [steps reps warmup] [names]
set -uo pipefail
nn=$1; timing=${2:-"20 7 5"}
here=$(cd "$(dirname "$0")" && pwd)
res=$(mktemp)
timeout 280 "$nn" "$here/examples_step.lua" $timing ${3:-} 2>&1 | tee -a "$res"
timeout 280 python3 "$here/examples_step.py" $timing ${3:-} 2>&1 | tee -a "$res"
python3 - "$res" <<'PY'
import sys, re
t = {}
for l in open(sys.argv[1]):
    m = re.match(r"example (\S+) (nnrepl|torch): median ([0-9.]+) ms", l)
    if m: t[m.group(1), m.group(2)] = float(m.group(3))
print(f"{'example':18} {'nnrepl ms':>10} {'torch ms':>10} {'ratio':>6}")
for (name, side), ms in t.items():
    if side == "nnrepl" and (name, "torch") in t:
        o = t[name, "torch"]
        print(f"{name:18} {ms:10.3f} {o:10.3f} {ms / o:6.2f}")
PY
