#!/usr/bin/env bash
# bench/seq_speed.{lua,py} in one run on the GPU: each model's step time, nnrepl against PyTorch
#   bash bench/seq_speed.sh NNREPL
set -uo pipefail
nn=$1
here=$(cd "$(dirname "$0")" && pwd)
a=$(timeout 300 "$nn" "$here/seq_speed.lua" 2>&1); b=$(timeout 300 python3 "$here/seq_speed.py" 2>&1)
python3 - "$a" "$b" <<'PY'
import sys
def load(text):
    return {" ".join(l.split()[:2]): float(l.split()[3]) for l in text.splitlines() if " step_ms " in l}
ours, theirs = load(sys.argv[1]), load(sys.argv[2])
if not ours or not theirs:
    print("no result:", sys.argv[1][-400:], sys.argv[2][-400:])
for k in ours:
    if k in theirs:
        print(f"{k}: nnrepl {ours[k]:.3f} ms, pytorch {theirs[k]:.3f} ms, nnrepl/pytorch {ours[k] / theirs[k]:.2f}x")
PY
