#!/usr/bin/env bash
# Python's math names in nnrepl (bindings/lua/pymath.lua, bindings/pymath.c) against CPython
# (python3, the reference): pymath_cases.py writes the cases and CPython's answers, pymath_cases.lua
# nnrepl's; each case's values must be equal, except where CPython computes with its own code
# rather than C's libm: gamma and lgamma (its Lanczos sums) within 1e-14 relative (absolute below 1: lgamma near its zeros), hypot and dist
# (its correctly rounded vector norm) within 1 ulp. An int beyond 64 bits is nnrepl's overflow error.
# Usage: bash tests/interp/test_pymath_cpython.sh build/nnrepl
set -u
nnrepl=${1:?usage: test_pymath_cpython.sh path/to/nnrepl}
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v python3 >/dev/null; then
  echo "SKIP: python3 absent: the CPython comparison"
  echo "0 passed, 0 failed, 1 skipped"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 "$here/pymath_cases.py" "$tmp" || { echo "pymath_cases.py failed"; echo "0 passed, 1 failed"; exit 1; }
timeout 120 "$nnrepl" "$here/pymath_cases.lua" "$tmp" || { echo "pymath_cases.lua failed"; echo "0 passed, 1 failed"; exit 1; }
python3 - "$tmp" <<'PY'
import json, math, sys
d = sys.argv[1]
cases = json.load(open(f"{d}/cases.json"))
want = open(f"{d}/want.txt").read().splitlines()
got = open(f"{d}/got.txt").read().splitlines()
passed = failed = 0
if len(got) != len(want):
    failed += 1
    print(f"FAIL: {len(want)} cases, nnrepl answered {len(got)}")

def value(tok):
    if tok in ("nan", "inf", "-inf"):
        return float(tok)
    if tok.startswith(("i:", "b:")):
        return tok
    return float.fromhex(tok)

def same(fn, a, b):
    if a.startswith("E:") or b.startswith("E:"):
        return a == b
    ta, tb = a.split(" "), b.split(" ")
    if len(ta) != len(tb):
        return False
    for x, y in zip(ta, tb):
        x, y = value(x), value(y)
        if isinstance(x, str) or isinstance(y, str):
            if x != y:
                return False
        elif math.isnan(x) or math.isnan(y):
            if not (math.isnan(x) and math.isnan(y)):
                return False
        elif x != y or math.copysign(1, x) != math.copysign(1, y):
            if fn in ("gamma", "lgamma") and abs(x - y) <= 1e-14 * max(1.0, abs(x)):
                continue
            if fn in ("hypot", "dist") and abs(x - y) <= math.ulp(x):
                continue
            return False
    return True

for c, w, g in zip(cases, want, got):
    if same(c[0], w, g):
        passed += 1
    else:
        failed += 1
        print(f"FAIL {json.dumps(c)}: CPython {w}, nnrepl {g}")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
PY
