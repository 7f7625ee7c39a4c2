#!/usr/bin/env bash
# Issue 7's (and 10's) numbers on the GPU machine: AlexNet on one GPU, DDP weak scaling
# (64 per GPU) and DataParallel, nnrepl and PyTorch in the same run.
#   bash bench/multi_gpu_run.sh NNREPL [gpu counts, e.g. "2" or "2 4"] [steps reps warmup]
set -uo pipefail
nn=$1; counts=${2:-2}; shift 2 || true
timing=${*:-"20 5 5"}
here=$(cd "$(dirname "$0")" && pwd)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
res=$(mktemp)
visible() { seq -s, 0 $(($1 - 1)); }
run() { # side gpus setup precision
  local side=$1 n=$2 setup=$3 prec=$4 line
  if [ "$side" = nnrepl ]; then
    if [ "${setup:0:3}" = ddp ]; then line=$(CUDA_VISIBLE_DEVICES=$(visible "$n") timeout 300 "$nn" --nproc-per-node "$n" "$here/multi_gpu_alexnet.lua" "$setup" "$prec" $timing 2>&1)
    else line=$(CUDA_VISIBLE_DEVICES=$(visible "$n") timeout 300 "$nn" "$here/multi_gpu_alexnet.lua" "$setup" "$prec" $timing 2>&1); fi
  else
    if [ "${setup:0:3}" = ddp ]; then line=$(CUDA_VISIBLE_DEVICES=$(visible "$n") timeout 300 python3 -m torch.distributed.run --nproc-per-node "$n" "$here/multi_gpu_alexnet.py" "$setup" "$prec" $timing 2>&1)
    else line=$(CUDA_VISIBLE_DEVICES=$(visible "$n") timeout 300 python3 "$here/multi_gpu_alexnet.py" "$setup" "$prec" $timing 2>&1); fi
  fi
  local ms; ms=$(grep -o 'step_ms [0-9.]*' <<<"$line" | tail -n 1 | cut -d' ' -f2)
  echo "$side $n $setup $prec ${ms:-nan}" >>"$res"
  grep 'setup ' <<<"$line" | sed "s/^/$side: /" || echo "$side $setup $prec on $n GPUs failed: $(tail -n 5 <<<"$line")"
}
for prec in fp32 amp; do
  run nnrepl 1 single $prec; run pytorch 1 single $prec
  for n in $counts; do run nnrepl "$n" ddp $prec; run pytorch "$n" ddp $prec; run nnrepl "$n" ddp_fp16 $prec; run pytorch "$n" ddp_fp16 $prec; done
done
for n in $counts; do
  run nnrepl "$n" ddp_view fp32; run pytorch "$n" ddp_view fp32
  run nnrepl "$n" dp fp32; run pytorch "$n" dp fp32
done
python3 - "$res" <<'PY'
import sys
t = {}
for l in open(sys.argv[1]):
    side, n, setup, prec, ms = l.split()
    t[side, int(n), setup, prec] = float(ms)
for side in ("nnrepl", "pytorch"):
    for (s, n, setup, prec), ms in sorted(t.items()):
        if s != side or setup == "single":
            continue
        one = t.get((side, 1, "single", prec), float("nan"))
        if setup.startswith("ddp"):
            print(f"{side} {setup} {prec} on {n} GPUs: {ms:.3f} ms/step at 64 per GPU, one GPU {one:.3f} ms: weak-scaling efficiency {one / ms:.1%}")
        else:
            ddp = t.get((side, n, "ddp", prec), float("nan"))
            print(f"{side} DataParallel {prec} on {n} GPUs: {ms:.3f} ms/step at batch {64 * n}; throughput vs its own DDP {ddp / ms:.2f}x")
for (s, n, setup, prec), ms in sorted(t.items()):
    if s == "nnrepl" and ("pytorch", n, setup, prec) in t:
        print(f"nnrepl/pytorch {setup} {prec} {n} GPU(s): {ms / t['pytorch', n, setup, prec]:.3f}x")
PY
rm -f "$res"
