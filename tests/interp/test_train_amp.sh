#!/usr/bin/env bash
# Document 004's three single-GPU programs (scripts/train_without.lua, train_autocast.lua,
# train_GradScaler.lua) on fake CIFAR-shaped data with tiny settings: each runs to the
# end, prints the document's lines, writes a checkpoint per epoch that torch.load reads
# back with PyTorch's AlexNet keys and a TensorBoard event file; autocast's first loss is
# within bfloat16 precision of float32's, and the GradScaler run's equals autocast's.
# scripts/eval_without.lua reads each checkpoint and prints an accuracy line, and on a
# crafted checkpoint (every prediction one class) prints the accuracy known beforehand,
# also when the keys carry DataParallel's "module." prefix, and on a CIFAR-10 binary test
# batch (the real dataset's path: CIFAR10, Resize, ToTensor).
# Usage: bash tests/interp/test_train_amp.sh build/nnrepl
bin=${1:?usage: test_train_amp.sh path/to/nnrepl}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$root/tests/interp/lib.sh"

declare -A first_loss
for name in train_without train_autocast train_GradScaler; do
  dir=$tmp/$name
  out=$(cd "$tmp" && "$bin" "$root/scripts/$name.lua" --fake-data --fake-size 4 --epochs 1 --batch_size 4 --img_size 64 \
    --checkpoint "$dir/checkpoint" --tensorboard_log "$dir/tb" --print-every 1 2>"$dir.err")
  rc=$?
  check "$name: exit 0" [ "$rc" -eq 0 ]
  [ "$rc" -eq 0 ] || { cat "$dir.err"; continue; }
  check "$name: CUDA line" matches "$out" '^CUDA available: (True|False)$'
  check "$name: dataset size" has "$out" "the train dataset size is 4"
  check "$name: epoch header" has "$out" " -----------------the 0 number of training epoch --------------"
  check "$name: progress line" matches "$out" '^Epoch: 0 \| Iteration: 1 \| lr: 0\.0001 \| loss: [0-9.e-]+ \| np\.mean\(loss\): [0-9.e-]+ $'
  check "$name: epoch end" matches "$out" '^epoch 0 is finished, and time is [0-9]+h[0-9]+m[0-9]+s$'
  check "$name: save line" has "$out" "Save state, iter: 0 "
  check "$name: finished line" matches "$out" '^The finished time is [0-9]+h[0-9]+m[0-9]+s$'
  check "$name: checkpoints" test -s "$dir/checkpoint/AlexNet_0.pth" -a -s "$dir/checkpoint/AlexNet.pth"
  check "$name: event file" compgen -G "$dir/tb/events.out.tfevents.*" >/dev/null
  keys=$("$bin" -e "local sd = torch.load('$dir/checkpoint/AlexNet.pth'); local n, prefixed = 0, 0
    for k in pairs(sd) do n = n + 1; if k:find('^module%.') then prefixed = prefixed + 1 end end
    print(n, prefixed, sd['features.0.weight'].shape, sd['classifier.6.bias'].dtype)" 2>&1)
  check "$name: checkpoint keys, none with module. ($keys)" test "$keys" = "16	0	torch.Size([64, 3, 11, 11])	torch.float32"
  first_loss[$name]=$(sed -nE 's/^Epoch: 0 \| Iteration: 1 \| lr: [^|]*\| loss: ([^ ]+) .*/\1/p' <<<"$out")
  ev=$(cd "$tmp" && "$bin" "$root/scripts/eval_without.lua" --fake-data --fake-size 4 --batch_size 4 --img_size 64 \
    --checkpoint "$dir/checkpoint" 2>&1)
  check "eval_without on $name: size line" has "$ev" "the test dataset size is 4"
  check "eval_without on $name: accuracy line ($ev)" matches "$ev" '^the total accuracy is tensor\((0\.[0-9]{4}|[01]\.)\)$'
  rm -rf "$dir/checkpoint" # 2 x 244 MB
done

check "autocast's loss near float32's (${first_loss[train_autocast]} vs ${first_loss[train_without]})" \
  close "${first_loss[train_autocast]}" "${first_loss[train_without]}" 0.05
check "GradScaler's loss equals autocast's" test -n "${first_loss[train_GradScaler]}" -a "${first_loss[train_GradScaler]}" = "${first_loss[train_autocast]}"

# A checkpoint whose last layer predicts class k (the first fake test label) for every
# image: the accuracy is the share of fake test labels equal to k (cifar_common.lua's fake
# test set: seed 1, rand then randint). Saved plain and with DataParallel's prefix.
mkdir -p "$tmp/sure" "$tmp/sure_dp"
want=$("$bin" -e "
  local N, S = 8, 64
  torch.manual_seed(1); torch.rand(N, 3, S, S); local labels = torch.randint(0, 10, {N})
  local k = labels[0]:item()
  local model = require('torchvision').models.alexnet()
  local sd = model:state_dict()
  sd['classifier.6.weight']:zero_(); sd['classifier.6.bias']:zero_(); sd['classifier.6.bias'][k] = 1
  torch.save(sd, '$tmp/sure/AlexNet.pth')
  torch.save(nn.DataParallel(model):state_dict(), '$tmp/sure_dp/AlexNet.pth')
  -- a CIFAR-10 test batch of 4 images (32x32), labels k, k+1, k, k+2: half of them class k
  os.execute('mkdir -p $tmp/cifar/cifar-10-batches-bin')
  local f = assert(io.open('$tmp/cifar/cifar-10-batches-bin/test_batch.bin', 'wb'))
  for i, d in ipairs({0, 1, 0, 2}) do f:write(string.char((k + d) % 10), string.rep(string.char(40 * i), 3072)) end
  f:close()
  print('the total accuracy is ' .. tostring(labels:eq(k):sum() / N))" 2>&1)
for d in sure sure_dp; do
  ev=$(cd "$tmp" && "$bin" "$root/scripts/eval_without.lua" --fake-data --fake-size 8 --batch_size 4 --img_size 64 \
    --checkpoint "$tmp/$d" 2>&1)
  check "eval_without on a crafted checkpoint ($d): $ev" test "$(tail -n 1 <<<"$ev")" = "$want"
done
check "the crafted accuracy is not 0 ($want)" matches "$want" '^the total accuracy is tensor\(0\.[0-9]*[1-9][0-9]*\)$'
ev=$(cd "$tmp" && "$bin" "$root/scripts/eval_without.lua" --dataset_root "$tmp/cifar" --batch_size 3 --img_size 64 \
  --checkpoint "$tmp/sure" 2>&1)
check "eval_without on a CIFAR-10 test batch: $ev" test "$ev" = "the test dataset size is 4
the total accuracy is tensor(0.5000)"

finish
