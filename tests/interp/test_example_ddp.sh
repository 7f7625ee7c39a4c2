#!/usr/bin/env bash
# scripts/examples/ddp (pytorch/examples distributed/ddp/example.py) on CPU with gloo: 2 and 3
# ranks through the launcher and run_example.sh; each rank's lines (its pid, the launcher's
# variables as Python prints the dict, world size, rank, backend), and the error without the
# launcher.
# Usage: bash tests/interp/test_example_ddp.sh build/nnrepl
bin=${1:?usage: test_example_ddp.sh path/to/nnrepl}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
root=$(cd "$(dirname "$0")/../.." && pwd)
example=$root/scripts/examples/ddp/example.lua
export CUDA_VISIBLE_DEVICES= # the CPU run, gloo ranks (the GPUs: tests/gpu/examples/mingpt_ddp.*)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$root/tests/interp/lib.sh"

for n in 2 3; do
  out=$(timeout 60 "$bin" --nproc-per-node $n "$example" 2>"$tmp/err")
  rc=$?
  check "$n ranks: exit 0" [ "$rc" -eq 0 ]
  [ "$rc" -eq 0 ] || cat "$tmp/err"
  check "$n ranks: the CPU line" [ "$(count "$out" "^\[rank[0-9]\]: Unable to locate sufficient $n gpus to run this example. Running it on the CPU with gloo\.$")" -eq $n ]
  check "$n ranks: init lines" [ "$(count "$out" "^\[rank([0-9])\]: \[[0-9]+\] Initializing process group with: \{'MASTER_ADDR': '127\.0\.0\.1', 'MASTER_PORT': '[0-9]+', 'RANK': '\1', 'LOCAL_RANK': '\1', 'WORLD_SIZE': '$n', 'LOCAL_WORLD_SIZE': '$n'\}$")" -eq $n ]
  check "$n ranks: group lines (a space before the end, as Python's)" [ "$(count "$out" "^\[rank([0-9])\]: \[[0-9]+\]: world_size = $n, rank = \1, backend=gloo $")" -eq $n ]
  check "$n ranks: demo lines" [ "$(count "$out" "^\[rank([0-9])\]: \[[0-9]+\] rank = \1, world_size = $n$")" -eq $n ]
  check "$n ranks: done lines" [ "$(count "$out" "^\[rank([0-9])\]: training completed in rank \1!$")" -eq $n ]
  pids=$(sed -nE 's/^\[rank[0-9]\]: \[([0-9]+)\] rank = .*/\1/p' <<<"$out" | sort -u | wc -l)
  check "$n ranks: $n processes" [ "$pids" -eq $n ]
  pid0=$(sed -nE 's/^\[rank0\]: \[([0-9]+)\] rank = .*/\1/p' <<<"$out")
  check "$n ranks: one pid per rank in all its lines" [ "$(count "$out" "^\[rank0\]: \[$pid0\]")" -eq 3 ]
done

out=$(NNREPL=$bin bash "$root/scripts/examples/ddp/run_example.sh" 2>&1)
check "run_example.sh: exit 0" [ $? -eq 0 ]
check "run_example.sh: its line" grep -qxF "Launching example.lua with 2 gpus" <<<"$out"
check "run_example.sh: localhost:5972" [ "$(count "$out" "'MASTER_ADDR': 'localhost', 'MASTER_PORT': '5972'")" -eq 2 ]

"$bin" "$example" >/dev/null 2>"$tmp/err"
check "without the launcher: exit non-zero" [ $? -ne 0 ]
check "without the launcher: message" grep -qF "KeyError: 'MASTER_ADDR' (start the ranks with nnrepl's launcher" "$tmp/err"

finish
