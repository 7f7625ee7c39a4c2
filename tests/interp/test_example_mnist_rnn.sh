#!/usr/bin/env bash
# pytorch/examples mnist_rnn ported to scripts/examples/mnist_rnn/main.lua, end to end on a
# tiny generated MNIST (tests/interp/make_tiny_mnist.lua: 256 training and 100 test images,
# class k a bright band on rows 2k+4..2k+5): the original's train and test lines, their
# counts and numbers, the test loss falling and the accuracy rising over 6 epochs, the
# --save-model checkpoint (keys and shapes, and reloaded into model.lua's Net it gives the
# last printed test accuracy), --dry-run's single batches, and clear errors for missing data
# and a bad flag.
# Usage: bash tests/interp/test_example_mnist_rnn.sh build/nnrepl
bin=${1:?usage: test_example_mnist_rnn.sh path/to/nnrepl}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
root=$(cd "$(dirname "$0")/../.." && pwd)
script=$root/scripts/examples/mnist_rnn/main.lua
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$root/tests/interp/lib.sh"

"$bin" "$root/tests/interp/make_tiny_mnist.lua" "$tmp/data" 256 100 || { echo "FAIL: making the data"; exit 1; }

# 6 epochs of 8 batches of 32, a line every 2 batches, lr 1.0 (0.1 learns too slowly for 48 steps)
out=$(cd "$tmp" && "$bin" "$script" --data-root "$tmp/data" --epochs 6 --batch-size 32 --test-batch-size 50 \
  --log-interval 2 --lr 1.0 --gamma 0.9 --save-model 2>"$tmp/err")
rc=$?
check "exit 0" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || cat "$tmp/err"
check "Dropout2d's warning on a 2-D input, as PyTorch's" grep -qF "UserWarning: dropout2d: Received a 2-D input" "$tmp/err"
check "first train line" matches "$out" $'^Train Epoch: 1 \\[0/256 \\(0%\\)\\]\tLoss: [0-9]+\\.[0-9]{6}$'
check "a later train line" matches "$out" $'^Train Epoch: 6 \\[192/256 \\(75%\\)\\]\tLoss: [0-9]+\\.[0-9]{6}$'
check "24 train lines" [ "$(count "$out" '^Train Epoch: ')" -eq 24 ]
check "6 test lines" [ "$(count "$out" '^Test set: Average loss: [0-9]+\.[0-9]{4}, Accuracy: [0-9]+/100 \([0-9]+%\)$')" -eq 6 ]
check "blank lines around the test line" matches "$(sed -n '5,7p' <<<"$out" | tr '\n' '|')" '^\|Test set: [^|]*\|\|$'
first=$(sed -nE 's/^Test set: Average loss: ([0-9.]+), .*/\1/p' <<<"$out" | head -n 1)
last=$(sed -nE 's/^Test set: Average loss: ([0-9.]+), .*/\1/p' <<<"$out" | tail -n 1)
acc=$(sed -nE 's/^Test set: .*Accuracy: ([0-9]+)\/100 .*/\1/p' <<<"$out" | tail -n 1)
check "test loss falls ($first -> $last)" awk_true "$first > 2.2 && $last < $first - 0.3"
check "test accuracy rises above chance ($acc/100)" awk_true "$acc >= 35"
check "train loss falls" awk_true "$(sed -nE 's/^Train Epoch: 1 \[0\/.*Loss: //p' <<<"$out") > \
  $(sed -nE 's/^Train Epoch: 6 .*Loss: //p' <<<"$out" | sort -n | head -n 1) + 0.3"

# the checkpoint: PyTorch's keys and shapes; reloaded, it scores what the last test line says
check "mnist_rnn.pt written" test -s "$tmp/mnist_rnn.pt"
re=$(cd "$root/scripts/examples/mnist_rnn" && "$bin" -e "
  local sd = torch.load('$tmp/mnist_rnn.pt')
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
  local ds = require('torchvision').datasets.MNIST('$tmp/data', {train = false,
    transform = require('torchvision').transforms.Compose({require('torchvision').transforms.ToTensor(),
      require('torchvision').transforms.Normalize({0.1307}, {0.3081})})})
  local x, y = torch.utils.data.DataLoader(ds, {batch_size = 100}):iter()()
  local _ <close> = torch.no_grad()
  print(model(x):argmax(1):eq(y):sum():item())" 2>&1)
check "checkpoint keys ($(head -n 1 <<<"$re"))" test "$(head -n 1 <<<"$re")" = \
  "batchnorm.bias=64 batchnorm.num_batches_tracked= batchnorm.running_mean=64 batchnorm.running_var=64 batchnorm.weight=64 fc1.bias=32 fc1.weight=32x64 fc2.bias=10 fc2.weight=10x32 rnn.bias_hh_l0=256 rnn.bias_ih_l0=256 rnn.weight_hh_l0=256x64 rnn.weight_ih_l0=256x28"
check "reloaded checkpoint scores the last test line's $acc ($(tail -n 1 <<<"$re"))" test "$(tail -n 1 <<<"$re")" = "$acc"

# --dry-run: one training batch and one test batch per epoch
out=$(cd "$tmp" && "$bin" "$script" --data-root "$tmp/data" --epochs 2 --batch-size 32 --test-batch-size 50 --dry-run 2>/dev/null)
check "dry run: exit 0" [ $? -eq 0 ]
check "dry run: 2 train lines, each the first batch" [ "$(count "$out" $'^Train Epoch: [12] \\[0/256 \\(0%\\)\\]\t')" -eq 2 ]
check "dry run: 2 test lines (one batch of 50 counted against 100)" \
  [ "$(count "$out" '^Test set: Average loss: [0-9]+\.[0-9]{4}, Accuracy: [0-9]+/100 \(')" -eq 2 ]

# missing data and a bad flag
err=$(cd "$tmp" && "$bin" "$script" --data-root "$tmp/none" --epochs 1 2>&1)
check "missing data: non-zero exit" [ $? -ne 0 ]
check "missing data: names the files and the folder" has "$err" "nnrepl downloads nothing: put train-images-idx3-ubyte.gz"
check "missing data: names the folder" has "$err" "$tmp/none/MNIST/raw"
err=$(cd "$tmp" && "$bin" "$script" --epochs x 2>&1)
check "bad flag: exit 2" [ $? -eq 2 ]
check "bad flag: argparse's message" has "$err" "error: argument --epochs: invalid int value: 'x'"

finish
