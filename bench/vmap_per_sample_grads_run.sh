#!/usr/bin/env bash
# The per-sample-gradients tutorial's vmap(grad(...)) in nnrepl (batched, and its loop) and in
# PyTorch on the same GPU in one run, and the ratio nnrepl / PyTorch (below 1: nnrepl is faster).
#   bash bench/vmap_per_sample_grads_run.sh NNREPL [runs] [batch]
set -uo pipefail
nn=$1 runs=${2:-7} batch=${3:-64}
here=$(cd "$(dirname "$0")" && pwd)
ours=$(timeout 300 "$nn" "$here/vmap_per_sample_grads.lua" "$runs" "$batch" 2>&1 | tail -n 1)
theirs=$(timeout 300 python3 "$here/vmap_per_sample_grads.py" "$runs" "$batch" 2>&1 | tail -n 1)
echo "nnrepl: $ours"
echo "$theirs"
python3 - "$ours" "$theirs" <<'PY'
import re, sys
b = re.search(r"batched ([0-9.]+) ms", sys.argv[1])
l = re.search(r"loop ([0-9.]+) ms", sys.argv[1])
t = re.search(r"vmap ([0-9.]+) ms", sys.argv[2])
if b and t:
    print(f"ratio batched / torch {float(b.group(1)) / float(t.group(1)):.2f}; loop / torch {float(l.group(1)) / float(t.group(1)):.2f}")
else:
    print("ratio: a side printed no time")
PY
