#!/usr/bin/env bash
# scripts/tutorials/distributed (pytorch/tutorials dist_tuto, ddp_tutorial with elastic_ddp,
# model_parallel_tutorial) on CPU with gloo through nnrepl's launcher: the values the tutorials
# print (send/recv and all_reduce results, the ring all-reduce equal to dist.all_reduce, the DDP
# checkpoint's parameters equal on every rank), the SGD losses falling, and the errors without
# the launcher or the data. The 2-GPU NCCL run is tests/gpu/tutorials/distributed.sh.
# Usage: bash tests/interp/test_tutorial_distributed.sh build/nnrepl
bin=${1:?usage: test_tutorial_distributed.sh path/to/nnrepl}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=$root/scripts/tutorials/distributed
export CUDA_VISIBLE_DEVICES=
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export TMPDIR=$tmp
source "$root/tests/interp/lib.sh"
"$bin" "$root/tests/interp/make_tiny_mnist.lua" "$tmp/data" 512 10 >/dev/null

# dist_tuto: the point-to-point and all_reduce sections on 2 ranks
out=$(timeout 120 "$bin" --nproc-per-node 2 "$dir/dist_tuto.lua" blocking nonblocking all_reduce ring 2>"$tmp/err")
check "dist_tuto p2p: exit 0" [ $? -eq 0 ] || cat "$tmp/err"
check "dist_tuto: both ranks end with 1. (blocking and non-blocking)" [ "$(count "$out" '^\[rank([01])\]: Rank  \1  has data  tensor\(1\.\)$')" -eq 4 ]
check "dist_tuto: isend line" has "$out" "[rank0]: Rank 0 started sending"
check "dist_tuto: irecv line" has "$out" "[rank1]: Rank 1 started receiving"
check "dist_tuto: all_reduce of ones over 2 ranks is 2." [ "$(count "$out" '^\[rank([01])\]: Rank  \1  has data  tensor\(2\.\)$')" -eq 2 ]
check "dist_tuto: ring all-reduce (0..3 + 10 r summed) equals dist.all_reduce" \
  [ "$(count "$out" '^\[rank([01])\]: Rank  \1  ring allreduce  tensor\(\[10\., 12\., 14\., 16\.\]\)  equals dist\.all_reduce:  True$')" -eq 2 ]
check "dist_tuto: reduce_op's deprecation is not used" lacks "$(cat "$tmp/err")" "FutureWarning"

# the ring on 3 ranks (two passes: send_buff then recv_buff), the group {0, 1} inside 3 ranks, SGD
out=$(timeout 120 "$bin" --nproc-per-node 3 "$dir/dist_tuto.lua" ring all_reduce sgd --epochs 6 --data-root "$tmp/data" 2>"$tmp/err")
check "dist_tuto 3 ranks: exit 0" [ $? -eq 0 ] || cat "$tmp/err"
check "dist_tuto 3 ranks: ring equals dist.all_reduce" \
  [ "$(count "$out" '^\[rank([012])\]: Rank  \1  ring allreduce  tensor\(\[30\., 33\., 36\., 39\.\]\)  equals dist\.all_reduce:  True$')" -eq 3 ]
check "dist_tuto 3 ranks: group {0, 1} sums to 2., rank 2 keeps 1." \
  [ "$(count "$out" '^\[rank([01])\]: Rank  \1  has data  tensor\(2\.\)$')" -eq 2 ] && has "$out" "[rank2]: Rank  2  has data  tensor(1.)"
check "dist_tuto sgd: 6 epoch lines per rank" [ "$(count "$out" '^\[rank([012])\]: Rank  \1 , epoch  [0-5] :  [0-9.]+$')" -eq 18 ]
for r in 0 1 2; do
  first=$(sed -nE "s/^\[rank$r\]: Rank  $r , epoch  0 :  //p" <<<"$out")
  last=$(sed -nE "s/^\[rank$r\]: Rank  $r , epoch  5 :  //p" <<<"$out")
  check "dist_tuto sgd: rank $r starts near ln 10 ($first)" close "$first" 2.30 0.1
  check "dist_tuto sgd: rank $r loss falls ($first -> $last)" less "$last" "$first"
done

"$bin" --nproc-per-node 2 "$dir/dist_tuto.lua" sgd --data-root "$tmp/none" >/dev/null 2>"$tmp/err"
check "dist_tuto: missing MNIST exits non-zero" [ $? -ne 0 ]
check "dist_tuto: missing MNIST names the folder" grep -qF "$tmp/none" "$tmp/err"
"$bin" "$dir/dist_tuto.lua" >/dev/null 2>"$tmp/err"
check "dist_tuto without the launcher: message" grep -qF "RANK is not set: start the ranks with nnrepl's launcher" "$tmp/err"

# ddp_tutorial: three demos in the same ranks; the checkpoint's parameters agree on every rank
for n in 2 4; do
  out=$(timeout 120 "$bin" --nproc-per-node $n "$dir/ddp_tutorial.lua" 2>"$tmp/err")
  check "ddp_tutorial $n ranks: exit 0" [ $? -eq 0 ] || cat "$tmp/err"
  check "ddp_tutorial $n ranks: the CPU line" [ "$(count "$out" '^\[rank[0-9]\]: Requires at least 2 GPUs to run, but got 0: running every rank on the CPU\.$')" -eq $n ]
  check "ddp_tutorial $n ranks: basic demo on every rank" [ "$(count "$out" '^\[rank([0-9])\]: Running basic DDP example on rank \1\.$')" -eq $n ]
  check "ddp_tutorial $n ranks: checkpoint demo on every rank" [ "$(count "$out" '^\[rank([0-9])\]: Running DDP checkpoint example on rank \1\.$')" -eq $n ]
  check "ddp_tutorial $n ranks: model parallel demo on world_size // 2 ranks" \
    [ "$(count "$out" '^\[rank([0-9])\]: Running DDP with model parallel example on rank \1\.$')" -eq $((n / 2)) ]
  loaded=$(sed -nE 's/^\[rank[0-9]\]: rank [0-9]: parameters after loading the checkpoint: //p' <<<"$out" | sort -u)
  stepped=$(sed -nE 's/^\[rank[0-9]\]: rank [0-9]: parameters after the step: //p' <<<"$out" | sort -u)
  check "ddp_tutorial $n ranks: loaded parameters on all ranks, one value" \
    [ "$(count "$out" 'parameters after loading the checkpoint: [-0-9.e+]+ [-0-9.e+]+$')" -eq $n -a "$(wc -l <<<"$loaded")" -eq 1 ]
  check "ddp_tutorial $n ranks: parameters after the step equal on all ranks" \
    [ "$(count "$out" 'parameters after the step: ')" -eq $n -a "$(wc -l <<<"$stepped")" -eq 1 ]
  check "ddp_tutorial $n ranks: the step changed them" [ "$loaded" != "$stepped" ]
  check "ddp_tutorial $n ranks: rank 0 removed the checkpoint" [ -z "$(ls "$tmp" | grep -v '^data$' | grep -v '^err$')" ]
done

# elastic_ddp: the process group from the launcher's environment
out=$(timeout 60 "$bin" --nproc-per-node 2 "$dir/elastic_ddp.lua" 2>"$tmp/err")
check "elastic_ddp: exit 0" [ $? -eq 0 ] || cat "$tmp/err"
check "elastic_ddp: start lines" [ "$(count "$out" '^\[rank([01])\]: Start running basic DDP example on rank \1\.$')" -eq 2 ]
check "elastic_ddp: gloo line" [ "$(count "$out" '^\[rank[01]\]: No CUDA device: gloo on the CPU instead of nccl\.$')" -eq 2 ]
"$bin" "$dir/elastic_ddp.lua" >/dev/null 2>"$tmp/err"
check "elastic_ddp without the launcher: env:// error" grep -qF "environment variable MASTER_ADDR expected, but not set" "$tmp/err"

# model_parallel_tutorial, both halves on the CPU, tiny
out=$(timeout 300 "$bin" "$dir/model_parallel_tutorial.lua" --cpu --num-batches 1 --batch-size 4 --image-size 64 \
  --num-repeat 2 --split-sizes 1,3 2>"$tmp/err")
check "model_parallel: exit 0" [ $? -eq 0 ] || cat "$tmp/err"
num='[0-9]+\.[0-9]{4} \+- [0-9]+\.[0-9]{4}'
check "model_parallel: the plots' titles" [ "$(count "$out" '^mp_vs_rn(_vs_pp)?\.png \(ResNet50 Execution Time \(Second\)\):$')" -eq 2 ]
check "model_parallel: their bars" [ "$(count "$out" "^  (Model Parallel|Single GPU): $num$")" -eq 4 ]
check "model_parallel: the pipelined bar" [ "$(count "$out" "^  Pipelining Model Parallel: $num$")" -eq 1 ]
check "model_parallel: split sizes" [ "$(count "$out" "^  split_size [13]: $num$")" -eq 2 ]
check "model_parallel: no PNG written" [ -z "$(ls "$tmp" | grep -i png)" ]

finish
