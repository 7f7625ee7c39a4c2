#!/usr/bin/env bash
# Runs bench/<name>.lua in nnrepl and bench/<name>.py in PyTorch, both printing lines
# "<tag> <case> <size> us <time>", and prints the table of the two and the ratio nnrepl / PyTorch
# (below 1: nnrepl is faster). Extra arguments go to both sides.
#   bash bench/ratio_run.sh NAME NNREPL [args...]
set -uo pipefail
name=$1 nn=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
res=$(mktemp)
timeout 300 "$nn" "$here/$name.lua" "$@" 2>&1 | sed 's/^[a-z]* /nnrepl /' | tee -a "$res"
timeout 300 python3 "$here/$name.py" "$@" 2>&1 | sed 's/^[a-z]* /torch /' | tee -a "$res"
python3 - "$res" <<'PY'
import sys
t = {}
for l in open(sys.argv[1]):
    w = l.split()
    if len(w) == 5 and w[0] in ("nnrepl", "torch") and w[3] == "us":
        t[w[0], w[1], w[2]] = float(w[4])
print(f"{'case':34} {'size':10} {'nnrepl us':>10} {'torch us':>10} {'ratio':>6}")
for (side, case, size), us in t.items():
    if side != "nnrepl": continue
    o = t.get(("torch", case, size))
    print(f"{case:34} {size:10} {us:10.1f} {o if o else float('nan'):10.1f} {us / o if o else float('nan'):6.2f}")
PY
rm -f "$res"
