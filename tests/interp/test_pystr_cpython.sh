#!/usr/bin/env bash
# Python's str methods (bindings/lua/pystr.lua) and unicodedata (bindings/unicodedata.c) against
# CPython 3.11 (python3, the reference): every method on ASCII and UTF-8 strings and edge cases,
# then per code point 0..0x2FFFF the unicodedata functions, the four normalizations and the
# one-character str methods, then 4000 random strings in the four normal forms.
# pystr_cases.py writes the cases and CPython's answers, pystr_cases.lua nnrepl's; lines are
# compared one by one. nnrepl's utf8proc has Unicode 15 where CPython 3.11 has 14: a code point
# may differ only where CPython's category is "Cn" (unassigned in 14); their count is printed.
# Usage: bash tests/interp/test_pystr_cpython.sh build/nnrepl
set -u
nnrepl=${1:?usage: test_pystr_cpython.sh path/to/nnrepl}
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v python3 >/dev/null; then
  echo "SKIP: python3 absent: the CPython comparison"
  echo "0 passed, 0 failed, 3 skipped"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 "$here/pystr_cases.py" "$tmp" || { echo "pystr_cases.py failed"; echo "0 passed, 1 failed"; exit 1; }
"$nnrepl" "$here/pystr_cases.lua" "$tmp" || { echo "pystr_cases.lua failed"; echo "0 passed, 1 failed"; exit 1; }

python3 - "$tmp" <<'EOF'
import json, sys
d = sys.argv[1]
passed = failed = 0

def lines(name):
    with open(f"{d}/{name}") as f:
        return f.read().splitlines()

# the methods: one check per case
cases, want, got = lines("methods.jsonl"), lines("methods.py.txt"), lines("methods.lua.txt")
assert len(cases) == len(want), "case and CPython answer counts differ"
for c, w, g in zip(cases, want, got + [""] * (len(want) - len(got))):
    if w == g:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {c}: CPython {w}, nnrepl {g}")

# per code point: one check per field over all code points, differences allowed only on "Cn"
fields = ["category", "bidirectional", "combining", "mirrored", "decimal", "NFC", "NFD", "NFKC", "NFKD",
          "swapcase", "title", "capitalize", "casefold", "isalpha", "isdecimal", "isdigit", "isnumeric", "isalnum",
          "isspace", "isupper", "islower", "istitle", "isprintable", "isidentifier"]
want, got = lines("ucd.py.txt"), lines("ucd.lua.txt")
if len(want) != len(got):
    failed += 1
    print(f"FAIL code points: CPython {len(want)} lines, nnrepl {len(got)}")
bad = {f: [] for f in fields}
allowed = {f: 0 for f in fields}
cn_points = set()
for w, g in zip(want, got):
    cp, wrest = w.split(" ", 1)
    gcp, grest = g.split(" ", 1)
    wv = wrest.replace("|", " ").split(" ")
    gv = grest.replace("|", " ").split(" ")
    for f, a, b in zip(fields, wv, gv):
        if a != b or gcp != cp:
            if wv[0] == "Cn":
                allowed[f] += 1
                cn_points.add(cp)
            else:
                bad[f].append(f"U+{cp} CPython {a} nnrepl {b}")
for f in fields:
    if bad[f]:
        failed += 1
        print(f"FAIL {f}: {len(bad[f])} assigned code points differ, e.g. {bad[f][:5]}")
    else:
        passed += 1
print(f"code points 0..0x2FFFF: {len(cn_points)} differ, all unassigned (Cn) in CPython's Unicode 14 "
      f"(category differs on {allowed['category']})")

# random strings: the four forms, is_normalized, and case mappings
names = ["NFC", "NFD", "NFKC", "NFKD", "is_NFC", "is_NFD", "is_NFKC", "is_NFKD", "swapcase", "title",
         "capitalize", "casefold", "istitle", "isupper", "islower", "split", "strip"]
strings, want, got = lines("norm.jsonl"), lines("norm.py.txt"), lines("norm.lua.txt")
for k, name in enumerate(names):
    diff = [(json.loads(s), w.split(" ")[k], g.split(" ")[k] if g else None)
            for s, w, g in zip(strings, want, got + [""] * (len(want) - len(got))) if not g or w.split(" ")[k] != g.split(" ")[k]]
    if diff:
        failed += 1
        print(f"FAIL {name} of random strings: {len(diff)} of {len(strings)} differ, e.g. {diff[:3]}")
    else:
        passed += 1
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
EOF
