#!/usr/bin/env bash
# pytorch/examples mnist ported to scripts/examples/mnist/main.lua, end to end on a tiny
# generated MNIST (tests/interp/make_tiny_mnist.lua: 256 training and 100 test images, class k
# a bright band on rows 2k+4..2k+5): the original's train and test lines, their counts and
# numbers, the test loss falling and the accuracy rising over 3 epochs, --seed's determinism,
# the --save-model checkpoint (keys and shapes, and reloaded into model.lua's Net it gives the
# last printed test loss), --dry-run's single batch, and clear errors for missing data and a
# bad flag.
# Usage: bash tests/interp/test_example_mnist.sh build/nnrepl
bin=${1:?usage: test_example_mnist.sh path/to/nnrepl}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
root=$(cd "$(dirname "$0")/../.." && pwd)
script=$root/scripts/examples/mnist/main.lua
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$root/tests/interp/lib.sh"

"$bin" "$root/tests/interp/make_tiny_mnist.lua" "$tmp/data" 256 100 || { echo "FAIL: making the data"; exit 1; }

# 3 epochs of 8 batches of 32, a line every 4 batches; lr 0.05 so that the fall is visible
run() { (cd "$tmp" && "$bin" "$script" --data-root "$tmp/data" --epochs 3 --batch-size 32 --test-batch-size 50 \
  --log-interval 4 --lr 0.05 --gamma 0.9 --no-accel "$@"); }
out=$(run --save-model 2>"$tmp/err")
rc=$?
check "exit 0" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || cat "$tmp/err"
check "first train line" matches "$out" $'^Train Epoch: 1 \\[0/256 \\(0%\\)\\]\tLoss: [0-9]+\\.[0-9]{6}$'
check "a later train line" matches "$out" $'^Train Epoch: 3 \\[128/256 \\(50%\\)\\]\tLoss: [0-9]+\\.[0-9]{6}$'
check "6 train lines" [ "$(count "$out" '^Train Epoch: ')" -eq 6 ]
check "3 test lines" [ "$(count "$out" '^Test set: Average loss: [0-9]+\.[0-9]{4}, Accuracy: [0-9]+/100 \([0-9]+%\)$')" -eq 3 ]
check "blank lines around the test line" matches "$(sed -n '3,5p' <<<"$out" | tr '\n' '|')" '^\|Test set: [^|]*\|\|$'
losses=$(sed -nE 's/^Test set: Average loss: ([0-9.]+), .*/\1/p' <<<"$out")
first=$(head -n 1 <<<"$losses") last=$(tail -n 1 <<<"$losses")
acc=$(sed -nE 's/^Test set: .*Accuracy: ([0-9]+)\/100 .*/\1/p' <<<"$out" | tail -n 1)
check "test loss falls ($first -> $last)" awk_true "$first > $last + 0.5 && $last < 0.6"
check "test accuracy well above chance ($acc/100)" awk_true "$acc >= 80"
check "train loss starts at chance and falls" awk_true "$(sed -nE 's/^Train Epoch: 1 \[0\/.*Loss: //p' <<<"$out") > 2.1 && \
  $(sed -nE 's/^Train Epoch: 3 \[128\/.*Loss: //p' <<<"$out") < 1.5"
check "same seed, same output" test "$(run 2>/dev/null)" = "$out"
check "another seed, other losses" test "$(run --seed 2 2>/dev/null | head -n 1)" != "$(head -n 1 <<<"$out")"

# the checkpoint: PyTorch's keys and shapes; reloaded, it gives the last test line's loss
check "mnist_cnn.pt written" test -s "$tmp/mnist_cnn.pt"
re=$(cd "$root/scripts/examples/mnist" && "$bin" -e "
  local sd = torch.load('$tmp/mnist_cnn.pt')
  local keys = {}
  for k, v in pairs(sd) do
    local dims = {}
    for d = 0, v:dim() - 1 do dims[#dims + 1] = v:size(d) end
    keys[#keys + 1] = k .. '=' .. table.concat(dims, 'x')
  end
  table.sort(keys)
  print(table.concat(keys, ' '))
  local model = require('model')()
  model:load_state_dict(sd)
  model:eval()
  local tv = require('torchvision')
  local ds = tv.datasets.MNIST('$tmp/data', {train = false,
    transform = tv.transforms.Compose({tv.transforms.ToTensor(), tv.transforms.Normalize({0.1307}, {0.3081})})})
  local x, y = torch.utils.data.DataLoader(ds, {batch_size = 100}):iter()()
  local _ <close> = torch.no_grad()
  print(string.format('%.4f', F.nll_loss(model(x), y):item()))" 2>&1)
check "checkpoint keys ($(head -n 1 <<<"$re"))" test "$(head -n 1 <<<"$re")" = \
  "conv1.bias=32 conv1.weight=32x1x3x3 conv2.bias=64 conv2.weight=64x32x3x3 fc1.bias=128 fc1.weight=128x9216 fc2.bias=10 fc2.weight=10x128"
check "reloaded checkpoint gives the last test loss $last ($(tail -n 1 <<<"$re"))" test "$(tail -n 1 <<<"$re")" = "$last"

# --dry-run: one training batch per epoch, the whole test set
rm -f "$tmp/mnist_cnn.pt"
out=$(cd "$tmp" && "$bin" "$script" --data-root "$tmp/data" --epochs 2 --batch-size 32 --test-batch-size 50 --dry-run 2>/dev/null)
check "dry run: exit 0" [ $? -eq 0 ]
check "dry run: 2 train lines, each the first batch" [ "$(count "$out" $'^Train Epoch: [12] \\[0/256 \\(0%\\)\\]\t')" -eq 2 ]
check "dry run: 2 test lines" [ "$(count "$out" '^Test set: Average loss: [0-9]+\.[0-9]{4}, Accuracy: [0-9]+/100 \(')" -eq 2 ]
check "dry run: no checkpoint without --save-model" test ! -e "$tmp/mnist_cnn.pt"

# missing data and a bad flag
err=$(cd "$tmp" && "$bin" "$script" --data-root "$tmp/none" --epochs 1 2>&1)
check "missing data: non-zero exit" [ $? -ne 0 ]
check "missing data: names the files" has "$err" "nnrepl downloads nothing: put train-images-idx3-ubyte.gz"
check "missing data: names the folder" has "$err" "$tmp/none/MNIST/raw"
err=$(cd "$tmp" && "$bin" "$script" --lr x 2>&1)
check "bad flag: exit 2" [ $? -eq 2 ]
check "bad flag: argparse's message" has "$err" "error: argument --lr: invalid float value: 'x'"

finish
