#!/usr/bin/env bash
# pytorch/examples siamese_network ported to scripts/examples/siamese_network/main.lua, end to
# end on a tiny generated MNIST (tests/interp/make_tiny_mnist.lua: 128 training and 40 test
# images, class k a bright band on rows 2k+4..2k+5): the device line, the original's train and
# test lines with their counts and numbers, the test loss falling and the accuracy rising over
# 3 epochs, the --save-model checkpoint (PyTorch's keys and shapes; reloaded into model.lua's
# SiameseNetwork it tells same-class pairs from different-class ones), --dry-run's single
# training batch, and clear errors for missing data and a bad flag.
# Usage: bash tests/interp/test_example_siamese_network.sh build/nnrepl
bin=${1:?usage: test_example_siamese_network.sh path/to/nnrepl}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
root=$(cd "$(dirname "$0")/../.." && pwd)
script=$root/scripts/examples/siamese_network/main.lua
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$root/tests/interp/lib.sh"

"$bin" "$root/tests/interp/make_tiny_mnist.lua" "$tmp/data" 128 40 || { echo "FAIL: making the data"; exit 1; }

# 3 epochs of 8 batches of 16 pairs, a line every 2 batches
out=$(cd "$tmp" && "$bin" "$script" --data-root "$tmp/data" --epochs 3 --batch-size 16 --test-batch-size 40 \
  --log-interval 2 --gamma 0.9 --no-accel --save-model 2>"$tmp/err")
rc=$?
check "exit 0" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || cat "$tmp/err"
check "device line" test "$(head -n 1 <<<"$out")" = "Using device: cpu"
check "first train line" matches "$out" $'^Train Epoch: 1 \\[0/128 \\(0%\\)\\]\tLoss: [0-9]+\\.[0-9]{6}$'
check "a later train line" matches "$out" $'^Train Epoch: 3 \\[96/128 \\(75%\\)\\]\tLoss: [0-9]+\\.[0-9]{6}$'
check "12 train lines" [ "$(count "$out" '^Train Epoch: ')" -eq 12 ]
check "3 test lines" [ "$(count "$out" '^Test set: Average loss: [0-9]+\.[0-9]{4}, Accuracy: [0-9]+/40 \([0-9]+%\)$')" -eq 3 ]
check "blank lines around the test line" matches "$(sed -n '6,8p' <<<"$out" | tr '\n' '|')" '^\|Test set: [^|]*\|\|$'
first=$(sed -nE 's/^Test set: Average loss: ([0-9.]+), .*/\1/p' <<<"$out" | head -n 1)
last=$(sed -nE 's/^Test set: Average loss: ([0-9.]+), .*/\1/p' <<<"$out" | tail -n 1)
acc=$(sed -nE 's/^Test set: .*Accuracy: ([0-9]+)\/40 .*/\1/p' <<<"$out" | tail -n 1)
# the original's test loss: each batch's mean BCE, summed, over the number of pairs
check "test loss falls ($first -> $last)" awk_true "$last > 0 && $last < $first / 2"
check "test accuracy well above chance ($acc/40)" awk_true "$acc >= 28"

# the checkpoint: PyTorch's keys (the ResNet without its fc as resnet.0 .. resnet.7, the head
# as fc.0 / fc.2); reloaded, it tells pairs apart (even: same class, odd: not, as APP_MATCHER)
check "siamese_network.pt written" test -s "$tmp/siamese_network.pt"
re=$(cd "$root/scripts/examples/siamese_network" && "$bin" -e "
  local sd = torch.load('$tmp/siamese_network.pt')
  local n, top = 0, 0
  for k in pairs(sd) do n = n + 1; top = math.max(top, tonumber(k:match('^resnet%.(%d+)%.') or 0)) end
  print(n, top, sd['resnet.0.weight'].shape, sd['fc.0.weight'].shape, sd['fc.2.weight'].shape,
    sd['resnet.7.1.bn2.running_var'].shape)
  local model = require('model')()
  model:load_state_dict(sd)
  model:eval()
  local ds = require('torchvision').datasets.MNIST('$tmp/data', {train = false})
  local x = ds.data:unsqueeze(1):float()
  -- image i and i + 10 share a class (labels cycle 0..9); i and i + 1 do not
  local a, b, t = {}, {}, {}
  for i = 0, 19 do
    a[#a + 1] = x[i]; b[#b + 1] = x[i + (i % 2 == 0 and 10 or 1)]; t[#t + 1] = (i + 1) % 2
  end
  local _ <close> = torch.no_grad()
  local out = model(torch.stack(a), torch.stack(b)):squeeze()
  print(torch.where(out:gt(0.5), 1, 0):eq(torch.tensor(t)):sum():item())" 2>&1)
check "checkpoint keys ($(head -n 1 <<<"$re"))" test "$(head -n 1 <<<"$re")" = \
  "124	7	torch.Size([64, 1, 7, 7])	torch.Size([256, 1024])	torch.Size([1, 256])	torch.Size([512])"
check "reloaded checkpoint tells pairs apart ($(tail -n 1 <<<"$re")/20)" awk_true "$(tail -n 1 <<<"$re") >= 14"

# --dry-run: one training batch per epoch (the test, as in the original, runs whole)
out=$(cd "$tmp" && "$bin" "$script" --data-root "$tmp/data" --epochs 2 --batch-size 16 --test-batch-size 40 --dry-run 2>&1)
check "dry run: exit 0" [ $? -eq 0 ]
check "dry run: 2 train lines, each the first batch" [ "$(count "$out" $'^Train Epoch: [12] \\[0/128 \\(0%\\)\\]\t')" -eq 2 ]
check "dry run: 2 test lines" [ "$(count "$out" '^Test set: Average loss: [0-9]+\.[0-9]{4}, Accuracy: [0-9]+/40 \(')" -eq 2 ]

# missing data and a bad flag
err=$(cd "$tmp" && "$bin" "$script" --data-root "$tmp/none" --epochs 1 2>&1)
check "missing data: non-zero exit" [ $? -ne 0 ]
check "missing data: names the files" has "$err" "nnrepl downloads nothing: put train-images-idx3-ubyte.gz"
check "missing data: names the folder" has "$err" "$tmp/none/MNIST/raw"
err=$(cd "$tmp" && "$bin" "$script" --lr fast 2>&1)
check "bad flag: exit 2" [ $? -eq 2 ]
check "bad flag: argparse's message" has "$err" "error: argument --lr: invalid float value: 'fast'"

finish
