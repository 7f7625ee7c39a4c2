#!/usr/bin/env bash
# Runs bench/module_parity.{lua,py} on the GPU and compares every keyed sum: prints the largest
# relative difference per model and PASS / FAIL against a tolerance (float32, TF32 off).
#   bash bench/module_parity.sh NNREPL [device] [tolerance]
set -uo pipefail
nn=$1; dev=${2:-cuda}; tol=${3:-2e-4}
here=$(cd "$(dirname "$0")" && pwd)
a=$(mktemp); b=$(mktemp)
"$nn" "$here/module_parity.lua" "$dev" >"$a" 2>&1 || { echo "nnrepl failed:"; tail -5 "$a"; exit 1; }
python3 "$here/module_parity.py" "$dev" >"$b" 2>&1 || { echo "pytorch failed:"; tail -5 "$b"; exit 1; }
python3 - "$a" "$b" "$tol" <<'PY'
import sys
def load(p):
    out = {}
    for l in open(p):
        f = l.split()
        try:
            if len(f) == 3: out[f[0]] = [float(f[1]), float(f[2])]
        except ValueError:
            pass  # a warning line
    return out
a, b, tol = load(sys.argv[1]), load(sys.argv[2]), float(sys.argv[3])
if set(a) != set(b):
    print("keys differ:", sorted(set(a) ^ set(b))); sys.exit(1)
# a sum's difference relative to its absolute sum, or to 1% of the model's largest absolute sum
# where that is larger (a gradient far smaller than the rest carries their float32 rounding)
big = {}
for k, v in b.items():
    m = k.split(".")[0]
    big[m] = max(big.get(m, 0), abs(v[1]))
worst = {}
for k in a:
    m = k.split(".")[0]
    scale = max(abs(b[k][1]), 0.01 * big[m], 1e-12)
    for x, y in zip(a[k], b[k]):
        d = abs(x - y) / scale
        if d > worst.get(m, (0, ""))[0]: worst[m] = (d, k)
bad = False
for m, (d, k) in sorted(worst.items()):
    ok = d <= tol
    bad |= not ok
    print(f"module parity {m}: max rel diff {d:.2e} ({k}) {'PASS' if ok else 'FAIL'}")
sys.exit(1 if bad else 0)
PY
