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
echo "== document 003 on $ngpu GPUs"
timeout 60 "$nn" scripts/doc003_dataparallel.lua 2>&1 | tail -n 12
echo "== AlexNet: one GPU, DDP, DataParallel (nnrepl and PyTorch)"
bash bench/multi_gpu_run.sh "$nn" "${1:-$ngpu}" 2>&1
