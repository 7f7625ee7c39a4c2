#!/usr/bin/env bash
# The rest of the "Introduction to PyTorch" (YouTube series) ports and the TensorBoard tutorial,
# scripts/tutorials/introyt/{tensors_deeper,autogradyt,modelsyt,tensorboard}_tutorial.lua, end to
# end: the printed values checked against each other and against values worked out by hand, and
# the TensorBoard files on a tiny generated FashionMNIST (tests/interp/make_tiny_mnist.lua: 256
# training and 100 test images) in a folder's data/ as the tutorial's root './data'.
# Usage: bash tests/interp/test_tutorial_introyt2.sh build/nnrepl
bin=${1:?usage: test_tutorial_introyt2.sh path/to/nnrepl}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=$root/scripts/tutorials/introyt
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$root/tests/interp/lib.sh"
dev=$(device_of "$bin")
# the n lines after the line $2 exactly
after() { awk -v m="$2" -v n="$3" 'f && n-- > 0 { print } $0 == m { f = 1 }' <<<"$1"; }
nums() { sed -E 's/tensor\(//g; s/(dtype|grad_fn|requires_grad)=[^ ,)]*//g; s/[][(),]/ /g' | tr -s ' \n' ' '; }

# ---- tensors_deeper ----
out=$(cd "$tmp" && "$bin" "$dir/tensors_deeper_tutorial.lua" 2>"$tmp/err")
check "tensors_deeper: exit 0" [ $? -eq 0 ] || cat "$tmp/err"
check "tensors_deeper: the class" [ "$(head -n 1 <<<"$out")" = torch.FloatTensor ]
r=$(sed -n '/^tensor(\[\[1., 1., 1.\],$/,$p' <<<"$out" | sed -n 3,10p)
check "tensors_deeper: seeding repeats random1 (= random) and random2" \
  [ "$(sed -n 1,2p <<<"$r")" = "$(sed -n 3,4p <<<"$r")" ] && [ "$(sed -n 3,6p <<<"$r")" != "$(sed -n 7,10p <<<"$r" | head -n 4)" ]
check "tensors_deeper: constants" has "$out" $'tensor([[3.1416, 2.7183],\n        [1.6180, 0.0073]])\ntensor([ 2,  3,  5,  7, 11, 13, 17, 19])\ntensor([[2, 4, 6],\n        [3, 6, 9]])'
check "tensors_deeper: int16 ones" has "$out" $'tensor([[1, 1, 1],\n        [1, 1, 1]], dtype=torch.int16)'
bvals=$(grep -B1 'dtype=torch.float64)$' <<<"$out" | nums)
cvals=$(grep -B1 'dtype=torch.int32)$' <<<"$out" | nums)
check "tensors_deeper: b.to(int32) truncates b ($bvals -> $cvals)" \
  [ "$(awk -v s="$bvals" 'BEGIN { n = split(s, v, " "); for (i = 1; i <= n; i++) printf "%d ", int(v[i]) }')" = "$(echo $cvals) " ]
check "tensors_deeper: arithmetic" has "$out" $'tensor([[1.5000, 1.5000],\n        [1.5000, 1.5000]])\ntensor([[4., 4.],\n        [4., 4.]])\ntensor([[1.4142, 1.4142],\n        [1.4142, 1.4142]])\ntensor([[ 2.,  4.],\n        [ 8., 16.]])\ntensor([[5., 5.],\n        [5., 5.]])\ntensor([[6., 6.],\n        [6., 6.]])'
check "tensors_deeper: (2, 3) * (3, 2) fails as in PyTorch" has "$out" "the size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 1"
check "tensors_deeper: the three bad broadcasts" [ "$(count "$out" 'the size of tensor a \(2\) must match the size of tensor b \((3|0)\) at non-singleton dimension 2\)$')" -eq 3 ]
check "tensors_deeper: sine and arcsine" has "$out" $'tensor([0.0000, 0.7854, 1.5708, 2.3562])\ntensor([0.0000, 0.7071, 1.0000, 0.7071])\ntensor([0.0000, 0.7854, 1.5708, 0.7854])'
check "tensors_deeper: xor, eq, reductions" has "$out" $'Bitwise XOR:\ntensor([3, 2, 1])\n\nBroadcasted, element-wise equality comparison:\ntensor([[ True, False],\n        [False, False]])\n\nReduction ops:\ntensor(4.)\n4.0\ntensor(2.5000)\ntensor(1.2910)\ntensor(24.)\ntensor([1, 2])'
check "tensors_deeper: v2 x v1 = -z" has "$out" $'Vectors & Matrices:\ntensor([ 0.,  0., -1.])'
m1=$(after "$out" "Vectors & Matrices:" 3 | tail -n 2 | nums); m3=$(after "$out" "Vectors & Matrices:" 5 | tail -n 2 | nums)
check "tensors_deeper: m3 = 3 m1 ($m1 / $m3)" awk_true "$(awk -v a="$m1" -v b="$m3" 'BEGIN { split(a, x, " "); split(b, y, " "); ok = 1; for (i = 1; i <= 4; i++) { d = y[i] - 3 * x[i]; if (d < -0.0003 || d > 0.0003) ok = 0 }; print ok }')"
check "tensors_deeper: sin_ changes b" has "$out" $'b:\ntensor([0.0000, 0.7854, 1.5708, 2.3562])\ntensor([0.0000, 0.7071, 1.0000, 0.7071])\ntensor([0.0000, 0.7071, 1.0000, 0.7071])'
check "tensors_deeper: b = a shares, clone does not" has "$out" $'tensor([[  1., 561.],\n        [  1.,   1.]])\ntensor([[True, True],\n        [True, True]])\ntensor([[1., 1.],\n        [1., 1.]])'
check "tensors_deeper: clone keeps grad, detach drops it" matches "$out" 'grad_fn=<CloneBackward0>\)$'
if [ "$dev" = cpu ]; then check "tensors_deeper: CPU only" [ "$(count "$out" '^Sorry, CPU only\.$')" -eq 2 ]; fi
check "tensors_deeper: shapes" has "$out" $'torch.Size([20])'
check "tensors_deeper: squeeze, unsqueeze_, reshape" has "$out" $'torch.Size([3, 226, 226])\ntorch.Size([1, 3, 226, 226])\ntorch.Size([6, 20, 20])\ntorch.Size([2400])\ntorch.Size([2400])'

# ---- autogradyt ----
out=$(cd "$tmp" && "$bin" "$dir/autogradyt_tutorial.lua" 2>"$tmp/err")
check "autogradyt: exit 0" [ $? -eq 0 ] || cat "$tmp/err"
check "autogradyt: the grad_fn chain" has "$out" $'d:\n<AddBackward0 object at '
check "autogradyt: next_functions as Python's tuples" matches "$(after "$out" "d:" 5)" '^\(\(<MulBackward0 object at 0x[0-9a-f]+>, 0\), \(None, 0\)\)
\(\(<SinBackward0 object at 0x[0-9a-f]+>, 0\), \(None, 0\)\)
\(\(<AccumulateGrad object at 0x[0-9a-f]+>, 0\),\)
\(\)$'
check "autogradyt: out = sum(2 sin a + 1) = 25" has "$out" "tensor(25., grad_fn=<SumBackward0>)"
grad=$(after "$out" "nil" 5 | head -n 5 | nums)
check "autogradyt: a.grad = 2 cos(a) at 25 points of [0, 2 pi]" awk_true "$(awk -v s="$grad" 'BEGIN { n = split(s, g, " "); ok = n == 25; for (i = 1; i <= n; i++) { d = g[i] - 2 * cos((i - 1) * 2 * 3.14159265358979 / 24); if (d < -0.0001 || d > 0.0001) ok = 0 }; print ok }')"
w0=$(grep -B1 'grad_fn=<SliceBackward0>)$' <<<"$out" | grep -v -- '--' | sed -n 1,2p | nums)
w1=$(grep -B1 'grad_fn=<SliceBackward0>)$' <<<"$out" | grep -v -- '--' | sed -n 5,6p | nums)
g=$(grep -A2 'grad_fn=<SliceBackward0>)$' <<<"$out" | sed -n '/^tensor(\[[^,]*,/,+1p' | sed -n 1,2p | nums)
check "autogradyt: SGD's step w - 0.001 grad ($w0 | $g | $w1)" awk_true "$(awk -v a="$w0" -v b="$g" -v c="$w1" 'BEGIN { n = split(a, w, " "); split(b, gg, " "); split(c, v, " "); ok = n == 10; for (i = 1; i <= n; i++) { d = v[i] - (w[i] - 0.001 * gg[i]); if (d < -0.00011 || d > 0.00011) ok = 0 }; print ok }')"
check "autogradyt: zero_grad gives zeros" has "$out" "tensor([0., 0., 0., 0., 0., 0., 0., 0., 0., 0.])"
check "autogradyt: requires_grad = false, no_grad, the decorator" has "$out" $'tensor([[2., 2., 2.],\n        [2., 2., 2.]], grad_fn=<MulBackward0>)\ntensor([[2., 2., 2.],\n        [2., 2., 2.]])\ntensor([[5., 5., 5.],\n        [5., 5., 5.]], grad_fn=<AddBackward0>)\ntensor([[5., 5., 5.],\n        [5., 5., 5.]])\ntensor([[6., 6., 6.],\n        [6., 6., 6.]], grad_fn=<MulBackward0>)\ntensor([[5., 5., 5.],\n        [5., 5., 5.]], grad_fn=<AddBackward0>)\ntensor([[5., 5., 5.],\n        [5., 5., 5.]])'
check "autogradyt: sin_ on a leaf fails" has "$out" "a leaf Variable that requires grad is being used in an in-place operation."
check "autogradyt: the profiler's table" matches "$out" '^(div|mul) +[0-9.]+% .* 1000$'
xg=$(grep -A1 '^tensor(\[.*grad_fn=<MulBackward0>)$' <<<"$out" | tail -n 1 | nums)
check "autogradyt: x.grad = v 2^k ($xg)" awk_true "$(awk -v s="$xg" 'BEGIN { split(s, g, " "); k = g[2] / 1.0; print (k >= 512 && k <= 2048 && (g[1] / 0.1 - k) ^ 2 < 0.01 * k && (g[3] / 0.0001 - k) ^ 2 < 0.01 * k) }')"
read -r x1 _ < <(grep -m1 -E '^\(tensor\(\[[0-9.]+\]\), tensor' <<<"$out" | nums)
read -r j _ < <(grep -m1 -E '^\(tensor\(\[\[[0-9.]+\]\]\), tensor\(\[\[3\.\]\]\)\)$' <<<"$out" | nums)
check "autogradyt: jacobian of 2 e^x + 3 y at x = $x1: 2 e^x ($j) and 3" close "$j" "$(awk -v x="$x1" 'BEGIN { print 2 * exp(x) }')" 0.0003
check "autogradyt: the 3-element jacobians are diagonal" has "$out" $'tensor([[3., 0., 0.],\n        [0., 3., 0.],\n        [0., 0., 3.]]))'
check "autogradyt: vjp returns (output, v^T J)" matches "$(tail -n 1 <<<"$out")" '^\(tensor\(\[.*\]\), tensor\(\[.*\]\)\)$'

# ---- modelsyt: the prints, and the classes run ----
out=$(cd "$tmp" && "$bin" "$dir/modelsyt_tutorial.lua" 2>"$tmp/err")
check "modelsyt: exit 0" [ $? -eq 0 ] || cat "$tmp/err"
check "modelsyt: the model's repr" has "$out" $'The model:\nTinyModel(\n  (linear1): Linear(in_features=100, out_features=200, bias=True)\n  (activation): ReLU()\n  (linear2): Linear(in_features=200, out_features=10, bias=True)\n  (softmax): Softmax(dim=None)\n)\n\n\nJust one layer:\nLinear(in_features=200, out_features=10, bias=True)'
check "modelsyt: 4 + 2 + 2 parameters printed" [ "$(count "$out" '^Parameter containing:$')" -eq 8 ]
x=$(after "$out" "Input:" 1 | nums); wb=$(after "$out" "Weight and Bias parameters:" 5 | grep -v Parameter | nums); y=$(after "$out" "Output:" 1 | nums)
check "modelsyt: y = x W^T + b ($x | $wb | $y)" awk_true "$(awk -v a="$x" -v b="$wb" -v c="$y" 'BEGIN { split(a, x, " "); split(b, p, " "); split(c, y, " "); ok = 1; for (o = 0; o < 2; o++) { s = p[7 + o]; for (k = 1; k <= 3; k++) s += x[k] * p[o * 3 + k]; d = s - y[o + 1]; if (d < -0.0003 || d > 0.0003) ok = 0 }; print ok }')"
pool=$(sed -n '/^tensor(\[\[\[[0-9.]*, [0-9.]*\],$/,+1p' <<<"$out" | nums)
big=$(sed -n '/^tensor(\[\[\[[0-9.]*, [0-9.]*, [0-9.]*, [0-9.]*, [0-9.]*, [0-9.]*\],$/,+5p' <<<"$out" | nums)
check "modelsyt: MaxPool2d(3) takes each 3x3 quadrant's max ($pool)" awk_true "$(awk -v a="$big" -v b="$pool" 'BEGIN { split(a, v, " "); split(b, m, " "); ok = 1; for (q = 0; q < 4; q++) { r0 = int(q / 2) * 3; c0 = (q % 2) * 3; mx = -1; for (r = 0; r < 3; r++) for (c = 0; c < 3; c++) { t = v[(r0 + r) * 6 + c0 + c + 1]; if (t > mx) mx = t }; if (mx != m[q + 1]) ok = 0 }; print ok }')"
mean=$(sed -nE 's/^tensor\((-?[0-9.e+-]+), grad_fn=<MeanBackward0>\)$/\1/p' <<<"$out")
check "modelsyt: the normalized mean is ~0 ($mean)" close "$mean" 0 0.00001
check "modelsyt: BatchNorm1d's output" has "$out" "grad_fn=<NativeBatchNormBackward0>)"
drop=$(tail -n 8 <<<"$out" | nums)
check "modelsyt: dropout zeroes or scales by 1/0.6" awk_true "$(awk -v s="$drop" 'BEGIN { n = split(s, v, " "); z = 0; for (i = 1; i <= n; i++) { if (v[i] == 0) z++; if (v[i] > 1 / 0.6 + 0.001) z = -99 }; print (n == 32 && z > 0 && z < 32) }')"
re=$(cd "$tmp" && "$bin" -e "
  local M = dofile('$dir/modelsyt_tutorial.lua')
  local net = M.LeNet()
  print('LeNet', net(torch.zeros(2, 1, 32, 32)).shape, net:num_flat_features(torch.zeros(2, 16, 6, 6)))
  local tagger = M.LSTMTagger(6, 6, 9, 3)
  local s = tagger(torch.tensor({ 0, 4, 8, 2 }))
  print('LSTMTagger', s.shape, string.format('%.5f', s:exp():sum(1):mean():item()))" 2>&1 | tail -n 2)
check "modelsyt: LeNet runs, num_flat_features = 16 * 6 * 6" has "$re" $'LeNet\ttorch.Size([2, 10])\t576'
check "modelsyt: LSTMTagger's log-probabilities sum to 1 a word" has "$re" $'LSTMTagger\ttorch.Size([4, 3])\t1.00000'

# ---- tensorboard_tutorial: one epoch of 64 batches, a record every 16, PR curves ----
mkdir -p "$tmp/f" "$tmp/none"
"$bin" "$root/tests/interp/make_tiny_mnist.lua" "$tmp/f/data" 256 100 >/dev/null || { echo "FAIL: making the data"; exit 1; }
mv "$tmp/f/data/MNIST" "$tmp/f/data/FashionMNIST"
mkdir -p "$tmp/f/runs/old" # the tutorial clears ./runs first
out=$(cd "$tmp/f" && "$bin" "$dir/tensorboard_tutorial.lua" --log-every 16 2>"$tmp/err")
check "tensorboard: exit 0" [ $? -eq 0 ] || cat "$tmp/err"
check "tensorboard: ./runs cleared" [ ! -e "$tmp/f/runs/old" ]
check "tensorboard: 4 prediction reports, at steps 15 .. 63" [ "$(count "$out" '^predictions vs\. actuals, step (15|31|47|63):$')" -eq 4 ]
check "tensorboard: 4 titles each" [ "$(count "$out" '^\(label: [A-Za-z/ -]+\)  \[(green|red)\]$')" -eq 16 ] && [ "$(count "$out" '^[A-Za-z/ -]+, [0-9]+\.[0-9]%$')" -eq 16 ]
colors=$(paste - - <<<"$(grep -E '^[A-Za-z/ -]+, [0-9.]+%$|^\(label:' <<<"$out")" | awk -F'\t' '{ split($1, p, ","); l = $2; sub(/^\(label: /, "", l); sub(/\)  \[.*/, "", l); c = ($2 ~ /green/); print (p[1] == l) == c }' | sort -u)
check "tensorboard: green exactly when the prediction is the label" [ "$colors" = 1 ]
check "tensorboard: Finished Training" has "$out" "Finished Training"
log=$tmp/f/runs/fashion_mnist_experiment_1
re=$("$bin" -e "
  local R = dofile('$root/tests/lua/tb_reader.lua')({ check = function(c, m) assert(c, m) end })
  local tags, steps, graphs, images = {}, {}, 0, {}
  for _, p in ipairs(R.events_in('$log')) do
    for _, rec in ipairs(R.read_records(p)) do
      local e = R.pb_decode(rec)
      if e[4] then graphs = graphs + 1 end
      for _, v in ipairs(e[5] and R.pb_decode(e[5][1])[1] or {}) do
        local val = R.pb_decode(v)
        local tag = val[1][1]
        if val[4] then local img = R.pb_decode(val[4][1]); images[#images + 1] = tag .. ' ' .. img[1][1] .. 'x' .. img[2][1] end
        if not tags[tag] then tags[tag] = true; tags[#tags + 1] = tag end
        if tag == 'training loss' then steps[#steps + 1] = e[2] and e[2][1] or '?' end
      end
    end
  end
  local ev = {}
  for _, p in ipairs(R.events_in('$log')) do
    for _, e in ipairs(R.read_events(p)) do
      for _, v in ipairs(e.values or {}) do if v.tag == 'training loss' then ev[#ev + 1] = e.step end end
    end
  end
  table.sort(tags)
  print('graphs ' .. graphs)
  print('images ' .. table.concat(images, ';'))
  print('loss steps ' .. table.concat(ev, ','))
  print('tags ' .. table.concat(tags, ';'))" 2>&1)
check "tensorboard: the image grid (4 images of 28 + 2 padding: 32 x 122)" has "$re" "images four_fashion_mnist_images 32x122"
check "tensorboard: the graph" has "$re" "graphs 1"
check "tensorboard: the training loss at steps 15, 31, 47, 63" has "$re" "loss steps 15,31,47,63"
check "tensorboard: a PR curve per class" has "$re" "tags Ankle Boot;Bag;Coat;Dress;Pullover;Sandal;Shirt;Sneaker;T-shirt/top;Trouser;four_fashion_mnist_images;training loss"
check "tensorboard: 100 embedded images of 784 features, labelled by class name" [ "$(wc -l <"$log/00000/default/tensors.tsv")" -eq 100 ] && \
  [ "$(head -n 1 "$log/00000/default/tensors.tsv" | awk -F'\t' '{ print NF }')" -eq 784 ] && \
  [ "$(grep -cvE '^(T-shirt/top|Trouser|Pullover|Dress|Coat|Sandal|Shirt|Sneaker|Bag|Ankle Boot)$' "$log/00000/default/metadata.tsv")" -eq 0 ]
(cd "$tmp/none" && "$bin" "$dir/tensorboard_tutorial.lua" >/dev/null 2>"$tmp/err")
check "tensorboard: missing data fails" [ $? -ne 0 ]
check "tensorboard: ... saying so" has "$(cat "$tmp/err")" "nnrepl downloads nothing"

finish
