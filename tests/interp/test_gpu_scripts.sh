#!/usr/bin/env bash
# The GPU machine's scripts (tests/gpu/) kept working on CPU: parity.lua trains the three
# models a few steps on its own generated files and writes losses and weights; memory.lua's
# smoke run passes. The real runs are on the GPU machine (bench/device_run.sh).
# Usage: bash tests/interp/test_gpu_scripts.sh build/nnrepl
bin=${1:?usage: test_gpu_scripts.sh path/to/nnrepl}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
check() { local name=$1; shift; if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $name"; fi; }

cd "$root"
for m in mlp cnn; do
  out=$("$bin" tests/gpu/parity.lua --dir "$tmp" --device cpu --steps 3 --models $m --generate 2>&1)
  check "parity.lua $m exits 0 ($out)" test $? -eq 0
  check "parity.lua $m wrote 3 finite losses" test "$(grep -cE '^-?[0-9]+\.[0-9]+' "$tmp/${m}_nnrepl_losses.txt" 2>/dev/null)" -eq 3
  check "parity.lua $m wrote its weights" test -s "$tmp/${m}_nnrepl_final.safetensors"
done
# the out-of-memory request (10^12 floats) must come back as an error under AddressSanitizer too
out=$(ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}allocator_may_return_null=1 "$bin" tests/gpu/memory.lua --device cpu --steps 300 2>&1)
check "memory.lua exits 0" test $? -eq 0
check "memory flat ($out)" grep -q '^memory flat: PASS' <<<"$out"
check "out of memory ($out)" grep -q '^out of memory: PASS' <<<"$out"
echo "$passed passed, $failed failed"
