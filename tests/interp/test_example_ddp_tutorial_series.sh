#!/usr/bin/env bash
# scripts/examples/ddp_tutorial_series (pytorch/examples distributed/ddp-tutorial-series) end to
# end on CPU with gloo: single_gpu.lua's lines and checkpoint; multigpu.lua starting its own 2 and
# 3 ranks (spawn() over the launcher), each rank's share of the batches, checkpoint from rank 0
# alone; multigpu_torchrun.lua's snapshot and a resumed run starting at the saved epoch;
# multinode.lua over two launchers as two nodes (global ranks in the lines, a snapshot on node 0
# only, equal weights to the single-node run's); the errors for missing arguments.
# The tutorial's loss is cross_entropy over one output column, so it is zero: there is no loss to
# watch fall, and the weights stay rank 0's initial ones.
# Usage: bash tests/interp/test_example_ddp_tutorial_series.sh build/nnrepl
bin=${1:?usage: test_example_ddp_tutorial_series.sh path/to/nnrepl}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=$root/scripts/examples/ddp_tutorial_series
export CUDA_VISIBLE_DEVICES= # the CPU run, gloo ranks (the GPUs: tests/gpu/examples/mingpt_ddp.*)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$root/tests/interp/lib.sh"

in_dir() { # folder, then a command run there (stderr to folder/err)
  local d=$1; shift
  mkdir -p "$d" && (cd "$d" && timeout 120 "$@" 2>"$d/err")
}
lua() { "$bin" -e "$1" 2>&1; }

# single_gpu.lua: 3 epochs, a checkpoint at epochs 0 and 2
out=$(in_dir "$tmp/s" "$bin" "$dir/single_gpu.lua" 3 2 --batch_size 512)
check "single: exit 0" [ $? -eq 0 ]
check "single: epoch lines" [ "$(count "$out" '^\[GPU0\] Epoch [012] \| Batchsize: 512 \| Steps: 4$')" -eq 3 ]
check "single: checkpoint lines" test "$(grep -c 'Training checkpoint saved at checkpoint.pt' <<<"$out")" -eq 2 -a \
  "$(sed -n 2p <<<"$out")" = "Epoch 0 | Training checkpoint saved at checkpoint.pt"
check "single: checkpoint loads back" test "$(lua "local s = torch.load('$tmp/s/checkpoint.pt')
  print(s.weight.shape, s.bias.shape)")" = "torch.Size([1, 20])	torch.Size([1])"
out=$(in_dir "$tmp/s" "$bin" "$dir/single_gpu.lua" 1 1 --batch_size 30)
check "single: last batch smaller, first one counted" has "$out" "[GPU0] Epoch 0 | Batchsize: 30 | Steps: 69"

# multigpu.lua: spawns its ranks; 2048 samples over 2 ranks of 64: 16 steps each
out=$(in_dir "$tmp/m" "$bin" "$dir/multigpu.lua" 2 1 --batch_size 64)
check "multigpu: exit 0" [ $? -eq 0 ]
check "multigpu: each rank's epochs" [ "$(count "$out" '^\[rank([01])\]: \[GPU\1\] Epoch [01] \| Batchsize: 64 \| Steps: 16$')" -eq 4 ]
check "multigpu: rank 0 alone saves" [ "$(count "$out" '^\[rank0\]: Epoch [01] \| Training checkpoint saved at checkpoint.pt$')" -eq 2 -a \
  "$(count "$out" 'checkpoint saved')" -eq 2 ]
check "multigpu: the bare model's keys" test "$(lua "local s = torch.load('$tmp/m/checkpoint.pt')
  print(s.weight.shape, s['module.weight'])")" = "torch.Size([1, 20])	nil"
out=$(in_dir "$tmp/m3" "$bin" "$dir/multigpu.lua" 1 1 --nprocs 3)
check "multigpu --nprocs 3: ceil(2048 / 3) = 683 samples, 22 steps of 32 per rank" \
  [ "$(count "$out" '^\[rank([012])\]: \[GPU\1\] Epoch 0 \| Batchsize: 32 \| Steps: 22$')" -eq 3 ]

# multigpu_torchrun.lua: a snapshot each epoch, then a resumed run
out=$(in_dir "$tmp/t" "$bin" --nproc-per-node 2 "$dir/multigpu_torchrun.lua" 2 1 --batch_size 256)
check "torchrun: exit 0" [ $? -eq 0 ]
check "torchrun: epoch lines" [ "$(count "$out" '^\[rank([01])\]: \[GPU\1\] Epoch [01] \| Batchsize: 256 \| Steps: 4$')" -eq 4 ]
check "torchrun: snapshot lines" [ "$(count "$out" '^\[rank0\]: Epoch [01] \| Training snapshot saved at snapshot.pt$')" -eq 2 ]
check "torchrun: snapshot holds EPOCHS_RUN 1 and the model" test "$(lua "local s = torch.load('$tmp/t/snapshot.pt')
  print(s.EPOCHS_RUN, s.MODEL_STATE.weight.shape)")" = "1	torch.Size([1, 20])"
out=$(in_dir "$tmp/t" "$bin" --nproc-per-node 2 "$dir/multigpu_torchrun.lua" 4 1 --batch_size 256)
check "resume: exit 0" [ $? -eq 0 ]
check "resume: lines on each rank" [ "$(count "$out" '^\[rank[01]\]: (Loading snapshot|Resuming training from snapshot at Epoch 1)$')" -eq 4 ]
check "resume: epochs 1 to 3 (the saved epoch is run again, as in the original)" \
  [ "$(count "$out" 'Epoch [123] \| Batchsize')" -eq 6 -a "$(count "$out" 'Epoch 0 \| Batchsize')" -eq 0 ]
check "resume: snapshot at epoch 3" test "$(lua "print(torch.load('$tmp/t/snapshot.pt').EPOCHS_RUN)")" = 3

# multinode.lua: two launchers as two nodes of one rank each
port=$("$bin" -e 'print(torch._dist.free_port())')
node() { # node rank
  in_dir "$tmp/n$1" "$bin" --nnodes 2 --node-rank "$1" --nproc-per-node 1 --master-addr 127.0.0.1 --master-port "$port" \
    "$dir/multinode.lua" 2 1 --batch_size 256 >"$tmp/n$1.out"
}
node 0 & pid=$!
node 1; rc1=$?
wait $pid; rc0=$?
check "multinode: exit 0" [ "$rc0" -eq 0 -a "$rc1" -eq 0 ]
check "multinode: node 1 names global rank 1" [ "$(grep -cE '^\[GPU1\] Epoch [01] \| Batchsize: 256 \| Steps: 4$' "$tmp/n1.out")" -eq 2 ]
check "multinode: global rank 0 alone saves" test -s "$tmp/n0/snapshot.pt" -a ! -e "$tmp/n1/snapshot.pt"
check "multinode: the weights of rank 0 (DDP's start), as on one node" test "$(lua "
  local a, b = torch.load('$tmp/n0/snapshot.pt').MODEL_STATE, torch.load('$tmp/t/snapshot.pt').MODEL_STATE
  print(torch.equal(a.weight, b.weight) and torch.equal(a.bias, b.bias))")" = true

# errors
in_dir "$tmp/e" "$bin" "$dir/single_gpu.lua" 3 >/dev/null
check "missing argument: exit 2" [ $? -eq 2 ]
check "missing argument: message" grep -qF "the following arguments are required: save_every" "$tmp/e/err"
in_dir "$tmp/e" "$bin" --nproc-per-node 2 "$dir/multigpu_torchrun.lua" 3 1 --batch_size x >/dev/null
check "bad value: exit non-zero" [ $? -ne 0 ]
check "bad value: message" grep -qF "argument --batch_size: invalid int value: 'x'" "$tmp/e/err"

finish
