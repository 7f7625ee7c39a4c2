#!/usr/bin/env bash
# require "re" against CPython's re: every case of re_cases.json (search/match/fullmatch, findall,
# finditer, split, sub/subn with templates and functions, escape, compile, errors, the Match API;
# flags, named groups, empty matches, Unicode text with and without re.ASCII, the tutorials'
# normalizeString patterns) runs through python3 (re_ref.py) and nnrepl (re_run.lua); each case's
# line must be the same. Without python3 every case counts as skipped.
# Usage: bash tests/interp/test_re_cpython.sh build/nnrepl
bin=${1:?usage: test_re_cpython.sh path/to/nnrepl}
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
cases=$here/re_cases.json

py=${PYTHON:-python3}
if ! command -v "$py" >/dev/null; then
  n=$(grep -c '^\["' "$cases") # one case a line
  echo "$py not found: the $n cases are skipped"
  echo "0 passed, 0 failed, $n skipped"
  exit 0
fi

ref=$("$py" "$here/re_ref.py" "$cases") || { echo "FAIL: re_ref.py"; echo "0 passed, 1 failed"; exit 1; }
got=$(timeout 120 "$bin" "$here/re_run.lua" "$cases" | sed 's/\t/ /') || { echo "FAIL: re_run.lua"; echo "0 passed, 1 failed"; exit 1; }
n=$(wc -l <<<"$ref")
check "both sides ran every case ($n)" [ "$(wc -l <<<"$got")" -eq "$n" -a "$n" -ge 150 ]
while IFS= read -r want; do
  id=${want%% *}
  have=$(grep -m1 "^$id " <<<"$got")
  if [ "$have" = "$want" ]; then passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL: case $id: $(sed -n "$((id + 1))p" "$cases")"
    echo "  python3: ${want#* }"
    echo "  nnrepl:  ${have#* }"
  fi
done <<<"$ref"
finish
