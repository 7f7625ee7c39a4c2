#!/usr/bin/env bash
# The "Learn the Basics" tutorial ports (scripts/tutorials/basics/*.lua), end to end on a tiny
# generated FashionMNIST (tests/interp/make_tiny_mnist.lua: 256 training and 100 test images,
# class k a bright band on rows 2k+4..2k+5, labels cycling 0..9), run from a folder whose data/
# holds it, as the tutorials' root="data": each port's printed lines and their numbers (the
# deterministic tensors and gradients exactly), the training losses falling, the files written
# and loaded back, and a clear error when the data is missing.
# Usage: bash tests/interp/test_tutorial_basics.sh build/nnrepl
bin=${1:?usage: test_tutorial_basics.sh path/to/nnrepl}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=$root/scripts/tutorials/basics
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$root/tests/interp/lib.sh"

"$bin" "$root/tests/interp/make_tiny_mnist.lua" "$tmp/data" 256 100 >/dev/null || { echo "FAIL: making the data"; exit 1; }
mv "$tmp/data/MNIST" "$tmp/data/FashionMNIST"
run() { (cd "$tmp" && "$bin" "$dir/$1" "${@:2}" 2>"$tmp/err"); }

# ---- quickstart: 3 epochs of 4 batches at lr 0.1 (the tutorial's 1e-3 barely moves in 12 steps) ----
out=$(run quickstart.lua --epochs 3 --lr 0.1)
check "quickstart: exit 0" [ $? -eq 0 ] || cat "$tmp/err"
check "quickstart: X's shape" has "$out" "Shape of X [N, C, H, W]: torch.Size([64, 1, 28, 28])"
check "quickstart: y's shape and dtype" has "$out" "Shape of y: torch.Size([64]) torch.int64"
check "quickstart: device" has "$out" "Using $(device_of "$bin") device"
check "quickstart: the model" has "$out" "    (4): Linear(in_features=512, out_features=10, bias=True)"
check "quickstart: 3 epochs" [ "$(count "$out" '^Epoch [123]$')" -eq 3 ]
check "quickstart: train lines ({:>7f} [{:>5d}/{:>5d}])" [ "$(count "$out" '^loss: [0-9]\.[0-9]{6}  \[   64/  256\]$')" -eq 3 ]
check "quickstart: test lines" [ "$(count "$out" '^ Accuracy: [0-9]+\.[0-9]%, Avg loss: [0-9]\.[0-9]{6} $')" -eq 3 ]
losses=$(sed -nE 's/^ Accuracy: .*Avg loss: ([0-9.]+) $/\1/p' <<<"$out")
first=$(head -n 1 <<<"$losses") last=$(tail -n 1 <<<"$losses")
check "quickstart: test loss falls ($first -> $last)" awk_true "$first > $last + 0.1"
check "quickstart: train loss starts near ln 10" awk_true "$(sed -nE '0,/^loss: /s/^loss: ([0-9.]+) .*/\1/p' <<<"$out") > 2.2"
check "quickstart: accuracy well above chance" awk_true "$(sed -nE 's/^ Accuracy: ([0-9.]+)%.*/\1/p' <<<"$out" | tail -n 1) >= 80"
check "quickstart: Done! and saved" has "$out" $'Done!\nSaved PyTorch Model State to model.pth'
check "quickstart: the prediction of test image 0 (a T-shirt/top)" matches "$out" '^Predicted: "[A-Za-z/ -]+", Actual: "T-shirt/top"$'
re=$(cd "$tmp" && "$bin" -e "
  local sd = torch.load('model.pth', { weights_only = true })
  local keys = {}
  for k, v in pairs(sd) do keys[#keys + 1] = k .. '=' .. table.concat(v.shape:totable(), 'x') end
  table.sort(keys)
  print(table.concat(keys, ' '))" 2>&1)
check "quickstart: model.pth's keys and shapes" test "$re" = "linear_relu_stack.0.bias=512 linear_relu_stack.0.weight=512x784 \
linear_relu_stack.2.bias=512 linear_relu_stack.2.weight=512x512 linear_relu_stack.4.bias=10 linear_relu_stack.4.weight=10x512"

# ---- optimization: its train_loop counts batch * batch_size + len(X) ----
out=$(run optimization.lua --epochs 3 --lr 0.1)
check "optimization: exit 0" [ $? -eq 0 ] || cat "$tmp/err"
check "optimization: 3 epochs" [ "$(count "$out" '^Epoch [123]$')" -eq 3 ]
check "optimization: train lines" [ "$(count "$out" '^loss: [0-9]\.[0-9]{6}  \[   64/  256\]$')" -eq 3 ]
losses=$(sed -nE 's/^ Accuracy: .*Avg loss: ([0-9.]+) $/\1/p' <<<"$out")
first=$(head -n 1 <<<"$losses") last=$(tail -n 1 <<<"$losses")
check "optimization: test loss falls ($first -> $last)" awk_true "$first > $last + 0.1"
check "optimization: Done!" [ "$(tail -n 1 <<<"$out")" = "Done!" ]

# ---- tensorqs: the deterministic prints exactly ----
out=$(run tensorqs.lua)
check "tensorqs: exit 0" [ $? -eq 0 ] || cat "$tmp/err"
check "tensorqs: ones_like keeps int64" has "$out" $'Ones Tensor: \n tensor([[1, 1],\n        [1, 1]]) '
check "tensorqs: rand_like as float" matches "$out" '^ tensor\(\[\[0\.[0-9]{4}, 0\.[0-9]{4}\],$'
check "tensorqs: zeros" has "$out" $'Zeros Tensor: \n tensor([[0., 0., 0.],\n        [0., 0., 0.]])'
check "tensorqs: attributes" has "$out" $'Shape of tensor: torch.Size([3, 4])\nDatatype of tensor: torch.float32\nDevice tensor is stored on: cpu'
check "tensorqs: indexing" has "$out" $'First row:  tensor([1., 1., 1., 1.])\nFirst column:  tensor([1., 1., 1., 1.])\nLast column: tensor([1., 1., 1., 1.])'
check "tensorqs: column 1 zeroed" has "$out" $'tensor([[1., 0., 1., 1.],\n        [1., 0., 1., 1.],\n        [1., 0., 1., 1.],\n        [1., 0., 1., 1.]])'
check "tensorqs: cat along dim 1" has "$out" "tensor([[1., 0., 1., 1., 1., 0., 1., 1., 1., 0., 1., 1.],"
check "tensorqs: item()" has "$out" "12.0 float"
check "tensorqs: add_(5)" has "$out" $'tensor([[6., 5., 6., 6.],\n        [6., 5., 6., 6.],\n        [6., 5., 6., 6.],\n        [6., 5., 6., 6.]])'

# ---- data: random samples (label = index % 10 in the tiny set), a custom dataset, a shuffled batch ----
"$bin" -e "local tio = require('torchvision').io
  tio.write_png(torch.full({1, 28, 28}, 7, {dtype = torch.uint8}), '$tmp/a.png')
  tio.write_png(torch.zeros(1, 5, 4, {dtype = torch.uint8}), '$tmp/b.png')" || echo "FAIL: writing the images"
printf 'file,label\na.png, 3\nb.png, 9\n' >"$tmp/labels.csv"
out=$(run data.lua --annotations "$tmp/labels.csv" --img-dir "$tmp")
check "data: exit 0" [ $? -eq 0 ] || cat "$tmp/err"
names=(T-Shirt Trouser Pullover Dress Coat Sandal Shirt Sneaker Bag "Ankle Boot")
ok=0
while read -r idx name; do [ "$name" = "${names[idx % 10]}" ] && ok=$((ok + 1)); done < <(sed -nE 's/^sample ([0-9]+): ([A-Za-z -]+), image torch.Size\(\[28, 28\]\)$/\1 \2/p' <<<"$out")
check "data: 9 samples, each labelled as its index says ($ok)" [ "$ok" -eq 9 ]
check "data: the custom dataset" has "$out" "CustomImageDataset: 2 samples, the first torch.Size([1, 28, 28]) torch.uint8, label 3"
check "data: batch shapes" has "$out" $'Feature batch shape: torch.Size([64, 1, 28, 28])\nLabels batch shape: torch.Size([64])\nImage: torch.Size([28, 28])'
check "data: a label" matches "$out" '^Label: tensor\([0-9]\)$'

# ---- transforms: ToTensor's range and the one-hot Lambda ----
out=$(run transforms.lua)
check "transforms: exit 0" [ $? -eq 0 ] || cat "$tmp/err"
check "transforms: ToTensor" matches "$out" '^image: torch.Size\(\[1, 28, 28\]\) torch.float32 in \[0\.[0-9]{4}, (0\.[0-9]{4}|1\.0000)\]$'
check "transforms: sample 0's one-hot target (label 0)" has "$out" "target: tensor([1., 0., 0., 0., 0., 0., 0., 0., 0., 0.])"
check "transforms: target_transform(7)" has "$out" "target_transform(7): tensor([0., 0., 0., 0., 0., 0., 0., 1., 0., 0.])"

# ---- buildmodel ----
out=$(run buildmodel.lua)
check "buildmodel: exit 0" [ $? -eq 0 ] || cat "$tmp/err"
check "buildmodel: predicted class" matches "$out" "^Predicted class: tensor\\(\\[[0-9]\\]$(device_suffix "$bin")\\)\$"
check "buildmodel: sizes" has "$out" $'torch.Size([3, 28, 28])\ntorch.Size([3, 784])\ntorch.Size([3, 20])'
check "buildmodel: no negatives after ReLU" [ "$(sed -n '/^After ReLU/,/^Model structure/p' <<<"$out" | grep -c -- '-0\.')" -eq 0 ]
check "buildmodel: negatives before ReLU" [ "$(sed -n '/^Before ReLU/,/^After ReLU/p' <<<"$out" | grep -c -- '-0\.')" -gt 0 ]
check "buildmodel: 6 parameters" [ "$(count "$out" '^Layer: linear_relu_stack\.[024]\.(weight|bias) \| Size: torch.Size\(\[[0-9, ]+\]\) \| Values : tensor\(')" -eq 6 ]
check "buildmodel: first layer's size" has "$out" "Layer: linear_relu_stack.0.weight | Size: torch.Size([512, 784]) | Values : tensor([["

# ---- autogradqs: with x all ones, every row of w.grad is b.grad ----
out=$(run autogradqs.lua)
check "autogradqs: exit 0" [ $? -eq 0 ] || cat "$tmp/err"
check "autogradqs: z's grad_fn" matches "$out" '^Gradient function for z = <AddBackward0 object at 0x[0-9a-f]+>$'
brow=$(sed -nE 's/^tensor\(\[([-0-9., ]+)\]\)$/\1/p' <<<"$out")
check "autogradqs: the 5 rows of w.grad equal b.grad ($brow)" [ "$(grep -cF "[${brow}]" <<<"$out")" -eq 6 ]
check "autogradqs: requires_grad, no_grad, detach" has "$out" $'\ntrue\nfalse\nfalse\n'
check "autogradqs: first call" has "$out" $'First call\ntensor([[4., 2., 2., 2., 2.],\n        [2., 4., 2., 2., 2.],'
check "autogradqs: gradients accumulate" has "$out" $'Second call\ntensor([[8., 4., 4., 4., 4.],\n        [4., 8., 4., 4., 4.],'
check "autogradqs: after zeroing" has "$out" $'Call after zeroing gradients\ntensor([[4., 2., 2., 2., 2.],'

# ---- saveloadrun on a small model (an untrained VGG16 writes 2 x 528 MB) ----
out=$(run saveloadrun.lua --model resnet18)
check "saveloadrun: exit 0" [ $? -eq 0 ] || cat "$tmp/err"
check "saveloadrun: both reloads compute the same" has "$out" "resnet18 output torch.Size([1, 1000]); max difference, state_dict reload: 0, whole-model reload: 0 (ResNet, training=false)"
re=$(cd "$tmp" && "$bin" -e "require('torchvision'); local n = 0; for _ in pairs(torch.load('model_weights.pth', { weights_only = true })) do n = n + 1 end; print(n)
  print(select(2, pcall(torch.load, 'model.pth')))" 2>&1)
check "saveloadrun: model_weights.pth holds resnet18's 122 entries" [ "$(head -n 1 <<<"$re")" = 122 ]
check "saveloadrun: model.pth needs weights_only=false" has "$re" "Unsupported global: ResNet was not an allowed global"
err=$(cd "$tmp" && "$bin" "$dir/saveloadrun.lua" --model nope 2>&1)
check "saveloadrun: an unknown model: exit 2" [ $? -eq 2 ]
check "saveloadrun: names it" has "$err" "no torchvision model named 'nope'"

# ---- missing data ----
mkdir "$tmp/empty"
err=$(cd "$tmp/empty" && "$bin" "$dir/quickstart.lua" --epochs 1 2>&1)
check "missing data: non-zero exit" [ $? -ne 0 ]
check "missing data: says nothing is downloaded" has "$err" "download=true, but nnrepl downloads nothing: put train-images-idx3-ubyte.gz"
check "missing data: names the folder" has "$err" "data/FashionMNIST/raw"

finish
