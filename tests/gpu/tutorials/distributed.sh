#!/usr/bin/env bash
# The distributed tutorial ports (scripts/tutorials/distributed) on 2 GPUs with NCCL: the values
# they print, as tests/interp/test_tutorial_distributed.sh checks them on the CPU with gloo, and
# model_parallel_tutorial with its halves on cuda:0 and cuda:1.
# Usage: bash tests/gpu/tutorials/distributed.sh path/to/nnrepl [MNIST_ROOT]
#   (MNIST_ROOT: IDX files for the SGD section; default a tiny generated set)
bin=${1:?usage: distributed.sh path/to/nnrepl [MNIST_ROOT]}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
root=$(cd "$(dirname "$0")/../../.." && pwd)
dir=$root/scripts/tutorials/distributed
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export TMPDIR=$tmp
source "$root/tests/interp/lib.sh"
if ! "$bin" -e 'os.exit(torch.cuda.is_available() and torch.cuda.device_count() >= 2 and torch.distributed.is_nccl_available() and 0 or 1)'; then
  echo "needs 2 GPUs and NCCL"; exit 1
fi
data=${2:-$tmp/data}
[ -n "$2" ] || "$bin" "$root/tests/interp/make_tiny_mnist.lua" "$data" 512 10 >/dev/null

out=$(timeout 300 "$bin" --nproc-per-node 2 "$dir/dist_tuto.lua" --backend nccl --epochs 6 --data-root "$data" 2>"$tmp/err")
check "dist_tuto nccl: exit 0" [ $? -eq 0 ] || cat "$tmp/err"
check "dist_tuto nccl: send/recv, isend/irecv give 1. on both ranks" [ "$(count "$out" '^\[rank([01])\]: Rank  \1  has data  tensor\(1\., device='"'"'cuda:\1'"'"'\)$')" -eq 4 ]
check "dist_tuto nccl: all_reduce gives 2." [ "$(count "$out" '^\[rank([01])\]: Rank  \1  has data  tensor\(2\., device='"'"'cuda:\1'"'"'\)$')" -eq 2 ]
check "dist_tuto nccl: ring equals dist.all_reduce" \
  [ "$(count "$out" '^\[rank([01])\]: Rank  \1  ring allreduce  tensor\(\[10\., 12\., 14\., 16\.\]\)  equals dist\.all_reduce:  True$')" -eq 2 ]
for r in 0 1; do
  first=$(sed -nE "s/^\[rank$r\]: Rank  $r , epoch  0 :  //p" <<<"$out")
  last=$(sed -nE "s/^\[rank$r\]: Rank  $r , epoch  5 :  //p" <<<"$out")
  check "dist_tuto nccl sgd: rank $r loss falls ($first -> $last)" less "$last" "$first"
done

out=$(timeout 300 "$bin" --nproc-per-node 2 "$dir/ddp_tutorial.lua" --backend nccl 2>"$tmp/err")
check "ddp_tutorial nccl: exit 0" [ $? -eq 0 ] || cat "$tmp/err"
check "ddp_tutorial nccl: on the GPUs" lacks "$out" "running every rank on the CPU"
check "ddp_tutorial nccl: demos" [ "$(count "$out" '^\[rank([01])\]: Running (basic DDP|DDP checkpoint) example on rank \1\.$')" -eq 4 ]
check "ddp_tutorial nccl: model parallel demo on rank 0" has "$out" "[rank0]: Running DDP with model parallel example on rank 0."
loaded=$(sed -nE 's/^\[rank[0-9]\]: rank [0-9]: parameters after loading the checkpoint: //p' <<<"$out" | sort -u)
stepped=$(sed -nE 's/^\[rank[0-9]\]: rank [0-9]: parameters after the step: //p' <<<"$out" | sort -u)
check "ddp_tutorial nccl: loaded parameters equal on both ranks" [ "$(count "$out" 'after loading the checkpoint: ')" -eq 2 -a "$(wc -l <<<"$loaded")" -eq 1 ]
check "ddp_tutorial nccl: parameters after the step equal on both ranks" [ "$(count "$out" 'after the step: ')" -eq 2 -a "$(wc -l <<<"$stepped")" -eq 1 ]
check "ddp_tutorial nccl: the step changed them" [ "$loaded" != "$stepped" ]

out=$(timeout 120 "$bin" --nproc-per-node 2 "$dir/elastic_ddp.lua" 2>"$tmp/err")
check "elastic_ddp nccl: exit 0" [ $? -eq 0 ] || cat "$tmp/err"
check "elastic_ddp nccl: start lines" [ "$(count "$out" '^\[rank([01])\]: Start running basic DDP example on rank \1\.$')" -eq 2 ]
check "elastic_ddp nccl: on the GPUs" lacks "$out" "No CUDA device"

out=$(timeout 600 "$bin" "$dir/model_parallel_tutorial.lua" --num-repeat 2 --split-sizes 12,20 2>"$tmp/err")
check "model_parallel cuda:0/cuda:1: exit 0" [ $? -eq 0 ] || cat "$tmp/err"
echo "$out"
num='[0-9]+\.[0-9]{4} \+- [0-9]+\.[0-9]{4}'
check "model_parallel: bars" [ "$(count "$out" "^  (Model Parallel|Single GPU|Pipelining Model Parallel): $num$")" -eq 5 ]
check "model_parallel: split sizes" [ "$(count "$out" "^  split_size (12|20): $num$")" -eq 2 ]

finish
