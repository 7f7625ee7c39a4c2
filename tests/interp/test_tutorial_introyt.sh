#!/usr/bin/env bash
# The "Introduction to PyTorch" (YouTube series) tutorial ports, scripts/tutorials/introyt/*.lua,
# end to end on tiny generated datasets: a FashionMNIST (tests/interp/make_tiny_mnist.lua, 256
# training and 100 test images, class k a bright band on rows 2k+4..2k+5) and a CIFAR-10
# (tests/interp/make_tiny_cifar10.lua: 200 training and 20 test images), each in a folder's data/ as the
# tutorials' root './data'. Checks the printed lines, the losses falling, the TensorBoard event
# files and projector files written (read back), the saved models, and the missing-data errors.
# Usage: bash tests/interp/test_tutorial_introyt.sh build/nnrepl
bin=${1:?usage: test_tutorial_introyt.sh path/to/nnrepl}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=$root/scripts/tutorials/introyt
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$root/tests/interp/lib.sh"

mkdir -p "$tmp/f" "$tmp/c" "$tmp/none"
"$bin" "$root/tests/interp/make_tiny_mnist.lua" "$tmp/f/data" 256 100 >/dev/null || { echo "FAIL: making the data"; exit 1; }
mv "$tmp/f/data/MNIST" "$tmp/f/data/FashionMNIST"
"$bin" "$root/tests/interp/make_tiny_cifar10.lua" "$tmp/c/data" || { echo "FAIL: making the CIFAR-10 data"; exit 1; }
run() { (cd "$tmp/$1" && "$bin" "$dir/$2" "${@:3}" 2>"$tmp/err"); }

# ---- introyt1: the deterministic prints exactly, LeNet, 3 epochs of 50 batches on CIFAR-10 ----
out=$(run c introyt1_tutorial.lua --epochs 3 --log-every 10)
check "introyt1: exit 0" [ $? -eq 0 ] || cat "$tmp/err"
check "introyt1: zeros and their dtype" has "$out" $'        [0., 0., 0.]])\ntorch.float32\ntensor([[1, 1, 1],'
check "introyt1: int16 ones" has "$out" $'        [1, 1, 1]], dtype=torch.int16)'
r1=$(sed -n '/^A random tensor:$/,+2p' <<<"$out" | tail -n 2)
r3=$(sed -n '/^Should match r1:$/,+2p' <<<"$out" | tail -n 2)
check "introyt1: re-seeding repeats r1" [ -n "$r1" ] && [ "$r1" = "$r3" ]
check "introyt1: threes and their shape" has "$out" $'tensor([[3., 3., 3.],\n        [3., 3., 3.]])\ntorch.Size([2, 3])'
# r's prints checked against each other: |r|, det = ad - bc, max
read -r a b c d < <(sed -n '/^A random matrix, r:$/,+2p' <<<"$out" | tail -n 2 | tr -d 'tensor([],)' | tr '\n' ' ')
check "introyt1: abs of r" has "$out" "$(printf 'tensor([[%.4f, %.4f],' "${a#-}" "${b#-}")"
det=$(sed -n '/^Determinant of r:$/,+1p' <<<"$out" | sed -nE 's/^tensor\((.*)\)$/\1/p')
check "introyt1: det(r) = ad - bc ($det)" close "$det" "$(awk "BEGIN { print $a * $d - $b * $c }")" 0.0003
mx=$(sed -n '/^Maximum value of r:$/,+1p' <<<"$out" | sed -nE 's/^tensor\((.*)\)$/\1/p')
check "introyt1: max(r)" close "$mx" "$(printf '%s\n' "$a" "$b" "$c" "$d" | sort -g | tail -n 1)" 0.00001
check "introyt1: the svd as a named tuple" matches "$out" '^S=tensor\(\[[0-9]\.[0-9]{4}, [0-9]\.[0-9]{4}\]\),$'
check "introyt1: std_mean as a tuple" matches "$out" '^\(tensor\(-?[0-9]\.[0-9]{4}\), tensor\(-?[0-9]\.[0-9]{4}\)\)$'
check "introyt1: LeNet's repr" has "$out" $'LeNet(\n  (conv1): Conv2d(1, 6, kernel_size=(5, 5), stride=(1, 1))\n  (conv2): Conv2d(6, 16, kernel_size=(5, 5), stride=(1, 1))\n  (fc1): Linear(in_features=400, out_features=120, bias=True)'
check "introyt1: the output's shape" has "$out" $'grad_fn=<AddmmBackward0>)\ntorch.Size([1, 10])'
check "introyt1: two lines of 4 labels (%5s)" [ "$(count "$out" '^( {0,2}(plane|car|bird|cat|deer|dog|frog|horse|ship|truck)( |$)){4}$')" -eq 2 ]
check "introyt1: 5 loss lines an epoch" [ "$(count "$out" '^\[[123], +[1-5]0\] loss: [0-9]\.[0-9]{3}$')" -eq 15 ]
first=$(sed -nE 's/^\[1, +[0-9]+\] loss: ([0-9.]+)$/\1/p' <<<"$out" | awk '{ s += $1 } END { print s / NR }')
check "introyt1: first epoch near ln 10 ($first)" close "$first" 2.303 0.1
check "introyt1: Finished Training and accuracy" has "$out" $'Finished Training\nAccuracy of the network on the 10000 test images: '
rm -rf "$tmp/c/data/cifar-10-batches-bin"
run c introyt1_tutorial.lua >/dev/null
check "introyt1: missing CIFAR-10 fails" [ $? -ne 0 ]
check "introyt1: ... saying what to put where" has "$(cat "$tmp/err")" "nnrepl downloads nothing"

# ---- trainingyt: 3 epochs of 64 batches at the tutorial's lr 0.001, a report every 16 ----
out=$(run f trainingyt.lua --epochs 3 --log-every 16)
check "trainingyt: exit 0" [ $? -eq 0 ] || cat "$tmp/err"
check "trainingyt: split sizes" has "$out" $'Training set has 256 instances\nValidation set has 100 instances'
check "trainingyt: 4 labels" matches "$out" '^(T-shirt/top|Trouser|Pullover|Dress|Coat|Sandal|Shirt|Sneaker|Bag|Ankle Boot)(  (T-shirt/top|Trouser|Pullover|Dress|Coat|Sandal|Shirt|Sneaker|Bag|Ankle Boot)){3}$'
check "trainingyt: the dummy labels" has "$out" "tensor([1, 5, 3, 7])"
# the dummy loss worked out from the printed outputs: mean over rows of logsumexp(row) - row[label]
dummy=$(sed -n '/^tensor(\[\[/,/\]\])$/p' <<<"$out" | head -n 8 | tr -d 'tensor([]),' | tr -s ' \n' ' ')
want=$(awk -v s="$dummy" 'BEGIN { n = split(s, v, " "); split("1 5 3 7", lab, " "); t = 0
  for (r = 0; r < 4; r++) { z = 0; for (k = 1; k <= 10; k++) z += exp(v[r * 10 + k]); t += log(z) - v[r * 10 + lab[r + 1] + 1] }
  print t / 4 }')
got=$(sed -nE 's/^Total loss for this batch: ([0-9.]+)$/\1/p' <<<"$out")
check "trainingyt: the dummy batch's loss ($got, by hand $want)" close "$got" "$want" 0.0005
check "trainingyt: 3 epochs" [ "$(count "$out" '^EPOCH [123]:$')" -eq 3 ]
check "trainingyt: 4 batch reports an epoch" [ "$(count "$out" '^  batch (16|32|48|64) loss: [0-9]\.[0-9]+$')" -eq 12 ]
check "trainingyt: LOSS lines (train as a float, valid as a tensor)" [ "$(count "$out" '^LOSS train [0-9]\.[0-9]+ valid tensor\([0-9]\.[0-9]{4}, grad_fn=<DivBackward0>\)$')" -eq 3 ]
v1=$(sed -nE 's/^LOSS .* valid tensor\(([0-9.]+),.*/\1/p' <<<"$out" | head -n 1)
v3=$(sed -nE 's/^LOSS .* valid tensor\(([0-9.]+),.*/\1/p' <<<"$out" | tail -n 1)
check "trainingyt: validation loss falls ($v1 -> $v3)" less "$v3" "$v1"
run_dir=$(ls -d "$tmp/f/runs/fashion_trainer_"*)
check "trainingyt: runs/fashion_trainer_<timestamp>" matches "$run_dir" 'fashion_trainer_[0-9]{8}_[0-9]{6}$'
models=$(cd "$tmp/f" && ls model_* | wc -l)
check "trainingyt: a model saved when the loss improved ($models)" [ "$models" -ge 1 ]
re=$(cd "$tmp/f" && "$bin" -e "
  package.path = '$dir/?.lua;' .. package.path
  local m = require('garment_classifier')()
  local f = io.popen('ls model_*'); local last; for l in f:lines() do last = l end; f:close()
  m:load_state_dict(torch.load(last))
  print(m(torch.zeros(2, 1, 28, 28)).shape)
  local R = dofile('$root/tests/lua/tb_reader.lua')({ check = function(c, m) assert(c, m) end })
  local function tags(d)
    local n = {}
    for _, p in ipairs(R.events_in(d)) do
      for _, e in ipairs(R.read_events(p)) do
        for _, v in ipairs(e.values or {}) do n[#n + 1] = v.tag .. '@' .. e.step end
      end
    end
    return table.concat(n, ' ')
  end
  print(tags('$run_dir'))
  print(tags('$run_dir/Training vs. Validation Loss_Validation'))" 2>&1)
check "trainingyt: the saved model loads and runs" has "$re" "torch.Size([2, 10])"
check "trainingyt: Loss/train at steps i + 1 + epoch * 64" has "$re" "Loss/train@16 Loss/train@32 Loss/train@48 Loss/train@64 Loss/train@80"
check "trainingyt: the validation run, one point an epoch" has "$re" "Training vs. Validation Loss@1 Training vs. Validation Loss@2 Training vs. Validation Loss@3"
run none trainingyt.lua >/dev/null
check "trainingyt: missing data fails" [ $? -ne 0 ]
check "trainingyt: ... saying so" has "$(cat "$tmp/err")" "nnrepl downloads nothing"

# ---- tensorboardyt: one epoch of 64 batches, validation every 16; image, scalars, graph, embedding ----
out=$(run f tensorboardyt_tutorial.lua --log-every 16)
check "tensorboardyt: exit 0" [ $? -eq 0 ] || cat "$tmp/err"
check "tensorboardyt: len(validation_loader)" [ "$(head -n 1 <<<"$out")" = 25 ]
check "tensorboardyt: 4 validation checks" has "$out" $'Batch 16\nBatch 32\nBatch 48\nBatch 64\nFinished Training'
log=$tmp/f/runs/fashion_mnist_experiment_1
re=$("$bin" -e "
  local R = dofile('$root/tests/lua/tb_reader.lua')({ check = function(c, m) assert(c, m) end })
  local out = {}
  for _, p in ipairs(R.events_in('$log')) do
    for _, rec in ipairs(R.read_records(p)) do
      local e = R.pb_decode(rec)
      if e[4] then
        local names = {}
        for _, n in ipairs(R.pb_decode(e[4][1])[1]) do names[#names + 1] = R.pb_decode(n)[1][1] end
        out[#out + 1] = 'graph ' .. #names .. ' ' .. table.concat(names, ' ')
      end
      for _, v in ipairs(e[5] and R.pb_decode(e[5][1])[1] or {}) do
        local val = R.pb_decode(v)
        if val[4] then
          local img = R.pb_decode(val[4][1])
          out[#out + 1] = 'image ' .. val[1][1] .. ' ' .. img[1][1] .. 'x' .. img[2][1] .. 'x' .. img[3][1]
        end
      end
    end
  end
  for _, run in ipairs({ 'Training', 'Validation' }) do
    local steps = {}
    for _, p in ipairs(R.events_in('$log/Training vs. Validation Loss_' .. run)) do
      for _, e in ipairs(R.read_events(p)) do if e.values then steps[#steps + 1] = e.step end end
    end
    out[#out + 1] = run .. ' ' .. table.concat(steps, ',')
  end
  print(table.concat(out, '\n'))" 2>&1)
check "tensorboardyt: the image grid (4 images of 28 + 2 padding: 32 x 122, RGB)" has "$re" "image Four Fashion-MNIST Images 32x122x3"
check "tensorboardyt: the losses at steps 15, 31, 47, 63" has "$re" $'Training 15,31,47,63\nValidation 15,31,47,63'
check "tensorboardyt: the graph with Net's layers" matches "$re" '^graph [0-9]+ input/input.1 .*Net/Conv2d\[conv1\]/Convolution .*Net/MaxPool2d\[pool\]/.*Net/Linear\[fc3\]/Addmm output/output.1$'
check "tensorboardyt: 100 embedded images" [ "$(wc -l <"$log/00000/default/tensors.tsv")" -eq 100 ] && [ "$(wc -l <"$log/00000/default/metadata.tsv")" -eq 100 ]
check "tensorboardyt: 784 features a row" [ "$(head -n 1 "$log/00000/default/tensors.tsv" | awk -F'\t' '{ print NF }')" -eq 784 ]
check "tensorboardyt: labels are class names" [ "$(grep -cvE '^(T-shirt/top|Trouser|Pullover|Dress|Coat|Sandal|Shirt|Sneaker|Bag|Ankle Boot)$' "$log/00000/default/metadata.tsv")" -eq 0 ]
check "tensorboardyt: the sprite and the projector config" [ -s "$log/00000/default/sprite.png" ] && has "$(cat "$log/projector_config.pbtxt")" 'sprite'

finish
