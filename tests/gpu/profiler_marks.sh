#!/usr/bin/env bash
# torch.cuda.profiler and torch.cuda.nvtx seen from Nsight Compute (the GPU machine has ncu):
#   1. ncu --profile-from-start off sees the two kernels inside torch.cuda.profiler.profile() and
#      none of those queued before or after it;
#   2. ncu --nvtx --nvtx-include "inside/" sees only the two kernels inside that NVTX range;
#   3. under torch.autograd.profiler.emit_nvtx, ncu --nvtx --nvtx-include "relu/" sees ReLU's kernel only.
# Usage: bash tests/gpu/profiler_marks.sh NNREPL_BINARY     (prints PASS/FAIL lines; exit 0: all passed)
set -uo pipefail
nn=${1:?usage: profiler_marks.sh NNREPL_BINARY}
command -v ncu > /dev/null || { echo "profiler marks: SKIP (no ncu)"; exit 0; }
work=$(mktemp -d /tmp/nnrepl-marks.XXXXXX)
trap 'rm -rf "$work"' EXIT
# outside: randn, cumsum, sort, sum; inside: relu and a 2-d transpose copy
cat > "$work/marks.lua" <<'LUA'
local x = torch.randn(4096, { device = "cuda" })
local before = x:cumsum(0)
torch.cuda.synchronize()
local mode = arg[1]
local function inside() return x:relu(), x:view(64, 64):t():contiguous() end
if mode == "range" then torch.cuda.profiler.profile(inside)
elseif mode == "emit" then torch.autograd.profiler.emit_nvtx(inside)
else torch.cuda.nvtx.range("inside", inside) end
local after = x:sort()
torch.cuda.synchronize()
print("ran", before:sum():item() ~= nil, after ~= nil)
LUA
status=0
check() { # check NAME LOG [N]: exactly N (2) kernels of inside() (ReLU is un_dense, the transpose a copy)
  local name=$1 log=$2 want=${3:-2}
  local kernels
  kernels=$(grep -c 'Context [0-9]*, Stream' "$log" || true)
  if [ "$kernels" = "$want" ] && grep -q 'un_dense' "$log"; then
    echo "profiler marks $name: PASS ($want kernels)"
  else
    echo "profiler marks $name: FAIL ($kernels kernels)"; grep 'Context [0-9]*, Stream' "$log" | cut -c1-150; status=1
  fi
}
ncu --clock-control none --profile-from-start off --metrics gpu__time_duration.sum "$nn" "$work/marks.lua" range > "$work/range.log" 2>&1
check "profiler.profile" "$work/range.log"
ncu --clock-control none --nvtx --nvtx-include "inside/" --metrics gpu__time_duration.sum "$nn" "$work/marks.lua" nvtx > "$work/nvtx.log" 2>&1
check "nvtx.range" "$work/nvtx.log"
ncu --clock-control none --nvtx --nvtx-include "relu/" --metrics gpu__time_duration.sum "$nn" "$work/marks.lua" emit > "$work/emit.log" 2>&1
check "emit_nvtx" "$work/emit.log" 1
exit $status
