#!/usr/bin/env bash
# pytorch/examples mnist_forward_forward ported to scripts/examples/mnist_forward_forward/main.lua,
# end to end on a tiny generated MNIST (tests/interp/make_tiny_mnist.lua): the "training layer"
# and "Loss:" lines (two spaces, as Python's print), each layer's loss falling, the train and
# test error lines (low errors on the easy data), --save_model / --save-model writing mnist_ff.pt
# (empty, as the original's), and clear errors for missing data and a bad flag.
# Usage: bash tests/interp/test_example_mnist_forward_forward.sh build/nnrepl
bin=${1:?usage: test_example_mnist_forward_forward.sh path/to/nnrepl}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
root=$(cd "$(dirname "$0")/../.." && pwd)
script=$root/scripts/examples/mnist_forward_forward/main.lua
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$root/tests/interp/lib.sh"

"$bin" "$root/tests/interp/make_tiny_mnist.lua" "$tmp/data" 200 100 || { echo "FAIL: making the data"; exit 1; }

out=$(cd "$tmp" && "$bin" "$script" --data-root "$tmp/data" --epochs 60 --train_size 200 --test_size 100 \
  --log-interval 20 --no_accel --save_model 2>&1)
rc=$?
check "exit 0" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || echo "$out"
check "line order" test "$(sed -E 's/[0-9.e-]+$/N/' <<<"$out" | tr '\n' '|')" = \
  "training layer:  N|Loss:  N|Loss:  N|Loss:  N|training layer:  N|Loss:  N|Loss:  N|Loss:  N|train error: N|test error: N|"
check "layers 0 and 1" test "$(grep '^training layer' <<<"$out" | tr '\n' '|')" = "training layer:  0|training layer:  1|"
check "losses printed as Python floats" [ "$(count "$out" '^Loss:  [0-9]\.[0-9]+$')" -eq 6 ]
l=($(sed -nE 's/^Loss:  //p' <<<"$out"))
check "layer 0's loss falls (${l[0]} -> ${l[2]})" awk_true "${l[0]} > ${l[2]} + 0.2"
check "layer 1's loss falls (${l[3]} -> ${l[5]})" awk_true "${l[3]} > ${l[5]} + 0.2"
tr_err=$(sed -nE 's/^train error: //p' <<<"$out") te_err=$(sed -nE 's/^test error: //p' <<<"$out")
check "train error low ($tr_err)" awk_true "$tr_err <= 0.2"
check "test error low ($te_err)" awk_true "$te_err <= 0.3"
check "mnist_ff.pt: an empty state_dict, as the original's" test \
  "$("$bin" -e "print(#torch.load('$tmp/mnist_ff.pt'):keys())" 2>&1)" = 0
rm -f "$tmp/mnist_ff.pt"
out=$(cd "$tmp" && "$bin" "$script" --data-root "$tmp/data" --epochs 2 --train_size 20 --test_size 10 --save-model 2>&1)
check "--save-model too; 2 epochs log once per layer" test "$? $(count "$out" '^Loss:  ')" = "0 2"
check "--save-model writes mnist_ff.pt" test -s "$tmp/mnist_ff.pt"

err=$(cd "$tmp" && "$bin" "$script" --data-root "$tmp/none" --epochs 1 2>&1)
check "missing data: non-zero exit" [ $? -ne 0 ]
check "missing data: names the files and the folder" has "$err" "nnrepl downloads nothing: put train-images-idx3-ubyte.gz"
err=$(cd "$tmp" && "$bin" "$script" --threshold two 2>&1)
check "bad flag: exit 2" [ $? -eq 2 ]
check "bad flag: argparse's message" has "$err" "error: argument --threshold: invalid float value: 'two'"

finish
