#!/usr/bin/env bash
# scripts/examples/mingpt_ddp (pytorch/examples distributed/minGPT-ddp) end to end on CPU: 2 gloo
# ranks through the launcher, a tiny GPT on a small generated text. Checks the printed lines
# (data, parameters, snapshot, per-rank train and eval losses), the first loss near ln(vocab),
# the loss falling, a snapshot that loads back with the model's keys, DDP keeping the ranks'
# weights equal (two launchers as two nodes of one rank each: both local ranks 0 write their own
# snapshot), a resumed run ending with the same weights as an uninterrupted one, the AMP path,
# and the errors for a bad override, a URL and missing data.
# Usage: bash tests/interp/test_example_mingpt_ddp.sh build/nnrepl
bin=${1:?usage: test_example_mingpt_ddp.sh path/to/nnrepl}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
root=$(cd "$(dirname "$0")/../.." && pwd)
main=$root/scripts/examples/mingpt_ddp/main.lua
export CUDA_VISIBLE_DEVICES= # the CPU run, gloo ranks (the GPUs: tests/gpu/examples/mingpt_ddp.*)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$root/tests/interp/lib.sh"

# 1200 characters of 11 distinct ones: words from a small vocabulary in a fixed order
mkdir -p "$tmp/data"
"$bin" -e "
  local words, out = {'the ', 'cat ', 'sat ', 'on ', 'a ', 'mat. '}, {}
  local n, i = 0, 0
  while n < 1200 do local w = words[i % 6 + 1]; out[#out + 1] = w; n = n + #w; i = i + 1 end
  local f = assert(io.open('$tmp/data/input.txt', 'w')); f:write(table.concat(out):sub(1, 1200)); f:close()" \
  || { echo "cannot make the text"; exit 1; }

tiny=(data_config.path="$tmp/data/input.txt" data_config.block_size=8 data_config.truncate=1.0
  gpt_config.n_layer=1 gpt_config.n_head=2 gpt_config.n_embd=16 trainer_config.batch_size=64
  trainer_config.data_loader_workers=0 trainer_config.save_every=1 trainer_config.use_amp=false
  optimizer_config.learning_rate=0.01 +gpt_config.embd_pdrop=0 +gpt_config.resid_pdrop=0 +gpt_config.attn_pdrop=0)
run() { # folder, nproc, then overrides: main.lua in the folder (the snapshot goes there)
  local d=$1 n=$2; shift 2
  mkdir -p "$d" && (cd "$d" && timeout 120 "$bin" --nproc-per-node "$n" "$main" "${tiny[@]}" "$@" 2>"$d/err")
}
state() { # snapshot: its epoch and model keys, one line
  "$bin" -e "local s = torch.load('$1'); local n = 0
    for _ in pairs(s.model_state) do n = n + 1 end
    print(s.finished_epoch, n, s.model_state['head.weight'].shape, s.optimizer_state.param_groups[1].weight_decay)" 2>&1
}
same_weights() { # two snapshots: every model tensor equal
  "$bin" -e "local a, b = torch.load('$1').model_state, torch.load('$2').model_state
    local n = 0
    for k, v in pairs(a) do if not torch.equal(v, b[k]) then print('differs: ' .. k); os.exit(1) end; n = n + 1 end
    os.exit(n > 0 and 0 or 1)"
}

out=$(run "$tmp/u" 2 trainer_config.max_epochs=3)
rc=$?
check "exit 0" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || cat "$tmp/u/err"
check "the CPU line" has "$out" "[rank0]: Unable to locate sufficient 2 gpus to run this example. Running it on the CPU with gloo."
check "data line on each rank" [ "$(count "$out" '^\[rank[01]\]: Data has 1200 characters, 11 unique\.$')" -eq 2 ]
check "parameters line" has "$out" "[rank0]: number of parameters: 0.00M"
check "no snapshot yet" [ "$(count "$out" 'Snapshot not found. Training model from scratch$')" -eq 2 ]
check "train lines: 3 epochs x 2 ranks" [ "$(count "$out" '^\[rank([01])\]: \[RANK\1\] Epoch [123] \| Iter 0 \| Train Loss [0-9]+\.[0-9]{5}$')" -eq 6 ]
check "eval lines: 3 epochs x 2 ranks" [ "$(count "$out" '^\[rank([01])\]: \[RANK\1\] Epoch [123] \| Iter 0 \| Eval Loss [0-9]+\.[0-9]{5}$')" -eq 6 ]
check "rank 0 alone saves, each epoch" [ "$(count "$out" '^\[rank0\]: Snapshot saved at epoch [123]$')" -eq 3 -a "$(count "$out" 'Snapshot saved')" -eq 3 ]
first=$(sed -nE 's/^\[rank0\]: \[RANK0\] Epoch 1 \| Iter 0 \| Train Loss ([0-9.]+)$/\1/p' <<<"$out")
last=$(sed -nE 's/^\[rank0\]: \[RANK0\] Epoch 3 \| Iter 0 \| Train Loss ([0-9.]+)$/\1/p' <<<"$out")
check "first loss $first near ln 11 = 2.398" close "$first" 2.398 0.05
check "loss falls: epoch 3's $last < 0.8 x epoch 1's $first" less "$last" "$(awk -v a="$first" 'BEGIN { print 0.8 * a }')"
check "snapshot: epoch 3, 20 tensors (mask buffer included), head [11, 16], decay group" \
  test "$(state "$tmp/u/gpt_snapshot.pt")" = "3	20	torch.Size([11, 16])	0.1"

# resumed: 2 epochs, then on to 3, the same weights as the uninterrupted run
run "$tmp/r" 2 trainer_config.max_epochs=2 >/dev/null
out=$(run "$tmp/r" 2 trainer_config.max_epochs=3)
check "resumed: exit 0" [ $? -eq 0 ]
check "resumed: line on each rank" [ "$(count "$out" 'Resuming training from snapshot at Epoch 2$')" -eq 2 ]
check "resumed: epoch 3 only" [ "$(count "$out" 'Train Loss')" -eq 2 -a "$(count "$out" 'Epoch 3 \| Iter 0 \| Train')" -eq 2 ]
check "resumed: the uninterrupted run's weights" same_weights "$tmp/u/gpt_snapshot.pt" "$tmp/r/gpt_snapshot.pt"

# two launchers as two nodes of one rank: each node's local rank 0 writes a snapshot
port=$("$bin" -e 'print(torch._dist.free_port())')
node() { # node rank, folder
  mkdir -p "$2" && (cd "$2" && timeout 120 "$bin" --nnodes 2 --node-rank "$1" --nproc-per-node 1 --master-addr 127.0.0.1 \
    --master-port "$port" "$main" "${tiny[@]}" trainer_config.max_epochs=2 >"$2/out" 2>"$2/err")
}
node 0 "$tmp/n0" & pid=$!
node 1 "$tmp/n1"; rc1=$?
wait $pid; rc0=$?
check "two nodes: exit 0" [ "$rc0" -eq 0 -a "$rc1" -eq 0 ]
check "two nodes: rank 1 trained on its own batches" test "$(grep -c 'RANK1.*Train' "$tmp/n1/out")" -eq 2 -a \
  "$(grep 'Epoch 1 | Iter 0 | Train' "$tmp/n0/out" | sed 's/.*Loss //')" != "$(grep 'Epoch 1 | Iter 0 | Train' "$tmp/n1/out" | sed 's/.*Loss //')"
check "two nodes: equal weights on both ranks" same_weights "$tmp/n0/gpt_snapshot.pt" "$tmp/n1/gpt_snapshot.pt"
check "two nodes: the weights moved" test "$(state "$tmp/n0/gpt_snapshot.pt" | cut -f1)" = 2 -a -n "$(! same_weights "$tmp/n0/gpt_snapshot.pt" "$tmp/u/gpt_snapshot.pt" && echo moved)"

# float16 autocast with a GradScaler (the config's default)
out=$(run "$tmp/a" 2 trainer_config.max_epochs=1 trainer_config.use_amp=true)
check "amp: exit 0" [ $? -eq 0 ]
check "amp: finite losses" [ "$(count "$out" '(Train|Eval) Loss [0-9]+\.[0-9]{5}$')" -eq 4 ]

# errors
run "$tmp/e" 2 trainer_config.bogus=1 >/dev/null
check "unknown key: exit non-zero" [ $? -ne 0 ]
check "unknown key: message" grep -qF "Could not override 'trainer_config.bogus': key 'bogus' is not in section 'trainer_config'" "$tmp/e/err"
run "$tmp/e" 2 data_config.path=https://example.com/input.txt >/dev/null
check "URL: message" grep -qF "CharDataset: nnrepl downloads nothing (https://example.com/input.txt)" "$tmp/e/err"
run "$tmp/e" 2 data_config.path="$tmp/none.txt" >/dev/null
check "missing data: exit non-zero" [ $? -ne 0 ]
check "missing data: message" grep -qF "CharDataset: cannot open the data: $tmp/none.txt: No such file or directory" "$tmp/e/err"
(cd "$tmp/e" && "$bin" "$main" "${tiny[@]}" >/dev/null 2>"$tmp/e/err")
check "without the launcher: message" grep -qF "LOCAL_RANK is not set: start the ranks with nnrepl's launcher" "$tmp/e/err"

finish
