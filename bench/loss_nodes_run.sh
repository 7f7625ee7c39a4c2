#!/usr/bin/env bash
# The pointwise losses' forward + backward, nnrepl and PyTorch on the same GPU in one run, and the
# ratio nnrepl / PyTorch (below 1: nnrepl is faster).
#   bash bench/loss_nodes_run.sh NNREPL [cpu]   (cpu: on the CPU; LOSS_THREADS for both sides' threads)
set -uo pipefail
nn=$1
dev=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
res=$(mktemp)
timeout 200 "$nn" "$here/loss_nodes.lua" $dev 2>&1 | sed 's/^loss /nnrepl /' | tee -a "$res"
timeout 200 python3 "$here/loss_nodes.py" $dev 2>&1 | sed 's/^loss /torch /' | tee -a "$res"
python3 - "$res" <<'PY'
import sys
t = {}
for l in open(sys.argv[1]):
    w = l.split()
    if len(w) == 5 and w[0] in ("nnrepl", "torch"):
        t[w[0], w[1], w[2]] = float(w[4])
print(f"{'loss':34} {'size':10} {'nnrepl us':>10} {'torch us':>10} {'ratio':>6}")
for (side, name, size), us in t.items():
    if side != "nnrepl": continue
    o = t.get(("torch", name, size))
    print(f"{name:34} {size:10} {us:10.1f} {o if o else float('nan'):10.1f} {us / o if o else float('nan'):6.2f}")
PY
