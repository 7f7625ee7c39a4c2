#!/usr/bin/env bash
# Runs every test of a build and sums their counts. Each test program prints
# "N passed, N failed[, N skipped]" as its last line; a program that crashes or
# prints no such line counts as one failure. The last line is the total.
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
passed=0 failed=0 skipped=0
run() { # name, command...
  local name=$1; shift
  local log; log=$(mktemp)
  "$@" >"$log" 2>&1
  local rc=$?
  local line; line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
  if [ -z "$line" ]; then
    cat "$log"; echo "FAIL $name: no result line (exit $rc)"; failed=$((failed + 1))
  else
    local p f s
    p=$(sed -E 's/^([0-9]+) passed.*/\1/' <<<"$line")
    f=$(sed -E 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/' <<<"$line")
    s=$(sed -nE 's/.*, ([0-9]+) skipped.*/\1/p' <<<"$line"); s=${s:-0}
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
    [ "$f" -ne 0 ] && cat "$log"
    echo "$name: $line"
    passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
  fi
  rm -f "$log"
}
for t in "$build"/tests/test_*; do
  [ -x "$t" ] && run "$(basename "$t")" "$t"
done
[ -f "$root/tests/lua/run.lua" ] && run lua_tests "$build/nnrepl" "$root/tests/lua/run.lua"
# Under the sanitizers (NNREPL_SANITIZED=1, make test-asan) the AlexNet script runs take many
# minutes and add no C coverage beyond the kernel tests: they count as skipped there.
heavy=" test_train_amp.sh test_train_dp_ddp.sh "
for t in "$root"/tests/interp/test_*.sh; do
  [ -f "$t" ] || continue
  if [ "${NNREPL_SANITIZED:-0}" = 1 ] && [[ $heavy == *" $(basename "$t") "* ]]; then
    echo "$(basename "$t"): skipped under the sanitizers"; skipped=$((skipped + 1)); continue
  fi
  run "$(basename "$t")" bash "$t" "$build/nnrepl"
done
for t in "$root"/tests/dist/test_*.sh; do
  [ -f "$t" ] && run "$(basename "$t")" bash "$t" "$build/nnrepl"
done
for t in "$root"/tests/embed/test_*.sh; do
  [ -f "$t" ] && run "$(basename "$t")" bash "$t" "$build"
done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
