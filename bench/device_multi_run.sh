#!/usr/bin/env bash
# The multi-GPU part of a device call (nvidia-h200-x2 or larger): NCCL and DataParallel
# tests, document 003 on every GPU, and the AlexNet scaling benchmark against PyTorch.
#   bash bench/device_multi_run.sh ["2 4": GPU counts for the benchmark; default all]
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
ngpu=$(nvidia-smi -L | wc -l)
nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | sed 's/^ */gpus: /'
echo "nccl: $(ldd "$nn" | grep nccl)"
echo "== torch.distributed tests (gloo and, with 2+ GPUs, nccl and DataParallel)"
timeout 400 bash tests/dist/test_dist.sh "$nn" 2>&1 | tail -n 25
echo "== all_reduce 256 MB float32 on $ngpu GPUs (bench/allreduce.*)"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
ours=$(timeout 120 "$nn" --nproc-per-node "$ngpu" bench/allreduce.lua 256 2>&1 | grep 'bus bandwidth' | tee /dev/stderr | sed -E 's/.*bus bandwidth ([0-9.]+).*/\1/')
theirs=$(timeout 120 python3 -m torch.distributed.run --nproc-per-node "$ngpu" bench/allreduce.py 256 2>&1 | grep 'bus bandwidth' | tee /dev/stderr | sed -E 's/.*bus bandwidth ([0-9.]+).*/\1/')
python3 -c "print(f'all_reduce 256 MB bus bandwidth: nnrepl {${ours:-0}} GB/s, pytorch {${theirs:-0}} GB/s, nnrepl/pytorch {${ours:-0}/max(${theirs:-0},1e-9):.3f}x')"
echo "== document 003 on $ngpu GPUs"
timeout 60 "$nn" scripts/doc003_dataparallel.lua 2>&1 | tail -n 12
echo "== AlexNet: one GPU, DDP, DataParallel (nnrepl and PyTorch)"
bash bench/multi_gpu_run.sh "$nn" "${1:-$ngpu}" 2>&1
