#!/usr/bin/env bash
# Issue 5's checks and numbers on the GPU machine, in one go (bench/device_run.sh calls it):
#   1. loss parity with PyTorch over 20 steps: document 001's MLP, document 000's CNN, AlexNet
#      (tests/gpu/parity.py + parity.lua, float32, TF32 off on both sides)
#   2. flat memory over 10,000 MLP steps, and out of memory (tests/gpu/memory.lua)
#   3. benchmarks against PyTorch: document 000's CNN step (bench/cnn_gpu.*), AlexNet fp32
#      step and peak memory (bench/amp_alexnet.*, its fp32 line)
# Usage: bash tests/gpu/run.sh NNREPL_BINARY
# Each piece runs under `timeout`, all of them within GPU_TEST_BUDGET seconds (300); logs go to
# $OUT/gpu_*.log (OUT defaults to /tmp/out), the parity files (about 1.2 GB) to a temporary
# folder removed at the end. Prints one summary line per check or benchmark. Exit status: 0
# when every check passed.
# A dry run without a GPU (the benchmarks then report no result):
#   GPU_TEST_PYTHON=/usr/bin/python3 GPU_TEST_DEVICE=cpu GPU_TEST_MODELS="mlp cnn" bash tests/gpu/run.sh build/nnrepl
set -uo pipefail
nn=${1:?usage: run.sh NNREPL_BINARY}
nn=$(cd "$(dirname "$nn")" && pwd)/$(basename "$nn")
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
work=$(mktemp -d /tmp/nnrepl-gpu.XXXXXX)
trap 'rm -rf "$work"' EXIT
status=0
PY=${GPU_TEST_PYTHON:-python3}
DEV=${GPU_TEST_DEVICE:-cuda}
MODELS=${GPU_TEST_MODELS:-mlp cnn alexnet}
BUDGET=${GPU_TEST_BUDGET:-300} # seconds for everything; a piece gets at most what is left

# run LIMIT LOG CMD...: the command under timeout, output to LOG; says so when it ran out of time
run() {
  local limit=$1 log=$2 left=$((BUDGET - SECONDS))
  shift 2
  [ "$left" -lt "$limit" ] && limit=$left
  if [ "$limit" -le 0 ]; then echo "$(basename "$log" .log): SKIPPED (the ${BUDGET}s budget is spent)"; status=1; return 1; fi
  timeout -k 10 "$limit" "$@" > "$log" 2>&1
  local rc=$?
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then echo "$(basename "$log" .log): TIMEOUT after ${limit}s"; status=1; fi
  return $rc
}
# the median a bench line prints
median() { sed -nE "s/.*$1.*median ([0-9.]+) ms.*/\1/p" "$2" | head -1; }
ratio() { "$PY" -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); print(f'{a / b:.2f}x')" "$1" "$2"; }
tail_of() { tail -n 5 "$1" | sed 's/^/    /'; }

echo "== issue 5: parity, memory, benchmarks ($(date +%F), $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1))"

# ---- 1. parity ----
models=${MODELS// /,}
if run 120 "$OUT/gpu_parity_torch.log" "$PY" tests/gpu/parity.py prepare "$work" --device "$DEV" --models "$models"; then
  for m in $MODELS; do
    run 60 "$OUT/gpu_parity_nnrepl_$m.log" "$nn" tests/gpu/parity.lua --dir "$work" --device "$DEV" --models "$m" ||
      { echo "parity $m: nnrepl failed:"; tail_of "$OUT/gpu_parity_nnrepl_$m.log"; }
  done
  run 60 "$OUT/gpu_parity_compare.log" "$PY" tests/gpu/parity.py compare "$work" --models "$models" || status=1
  grep -E '^(parity|  step)' "$OUT/gpu_parity_compare.log"
else
  echo "parity: PyTorch's side failed:"; tail_of "$OUT/gpu_parity_torch.log"; status=1
fi
rm -rf "$work"/*

# ---- 2. memory ----
run 60 "$OUT/gpu_memory.log" "$nn" tests/gpu/memory.lua --device "$DEV" --steps 10000 || status=1
grep -E '^(memory flat|out of memory):' "$OUT/gpu_memory.log" || { echo "memory: no result:"; tail_of "$OUT/gpu_memory.log"; }

# ---- 3. benchmarks ----
run 45 "$OUT/gpu_cnn_nnrepl.log" "$nn" bench/cnn_gpu.lua
run 45 "$OUT/gpu_cnn_torch.log" "$PY" bench/cnn_gpu.py
ours=$(median "nnrepl cnn step" "$OUT/gpu_cnn_nnrepl.log")
theirs=$(median "pytorch cnn step" "$OUT/gpu_cnn_torch.log")
if [ -n "$ours" ] && [ -n "$theirs" ]; then
  echo "cnn step (doc 000, batch 32, SGD momentum): nnrepl $ours ms, pytorch $theirs ms, nnrepl/pytorch $(ratio "$ours" "$theirs") (goal <= 0.3x)"
  graph=$(median "nnrepl cnn graph step" "$OUT/gpu_cnn_nnrepl.log")
  [ -n "$graph" ] && echo "cnn step in a CUDA graph: nnrepl $graph ms, pytorch graph $(median "pytorch cnn graph step" "$OUT/gpu_cnn_torch.log") ms, nnrepl graph/pytorch eager $(ratio "$graph" "$theirs")"
else
  echo "cnn step: no result:"; tail_of "$OUT/gpu_cnn_nnrepl.log"; tail_of "$OUT/gpu_cnn_torch.log"
fi

# AlexNet 227x227 batch 64 AdamW: bench/amp_alexnet.* with 10 timed steps, 3 repeats, 3 warm-up
# (GPU_TEST_ALEXNET_BENCH=0 leaves it out)
[ "${GPU_TEST_ALEXNET_BENCH:-1}" = 0 ] && exit $status
run 90 "$OUT/gpu_alexnet_nnrepl.log" "$nn" bench/amp_alexnet.lua 10 3 3
run 90 "$OUT/gpu_alexnet_torch.log" "$PY" bench/amp_alexnet.py 10 3 3
fp32() { sed -nE 's/^mode fp32 +step_ms ([0-9.]+) peak_gib ([0-9.]+).*/\1 \2/p' "$1" | head -1; }
read -r ot op <<< "$(fp32 "$OUT/gpu_alexnet_nnrepl.log")"
read -r tt tp <<< "$(fp32 "$OUT/gpu_alexnet_torch.log")"
if [ -n "${ot:-}" ] && [ -n "${tt:-}" ]; then
  echo "alexnet fp32 step (batch 64, AdamW): nnrepl $ot ms, pytorch $tt ms, nnrepl/pytorch $(ratio "$ot" "$tt"); peak nnrepl $op GiB, pytorch $tp GiB, $(ratio "$op" "$tp") (goals <= 1.0x)"
else
  echo "alexnet fp32: no result:"; tail_of "$OUT/gpu_alexnet_nnrepl.log"; tail_of "$OUT/gpu_alexnet_torch.log"
fi
exit $status
