#!/usr/bin/env bash
# scripts/tutorials/blitz (the 60 Minute Blitz) and scripts/tutorials/examples (Learning PyTorch
# with Examples' polynomial programs) end to end on tiny settings: the printed lines (tensors
# whose values are known, shapes, the gradient checks, the model tree), a tiny CIFAR-10 made
# here in the binary format (3 epochs, the loss falling, the weights file loading back, the
# accuracy lines), the error for missing data, DataParallel's batch sizes, and the polynomial
# fits: their line format, the loss falling, the hand-made gradients of polynomial_tensor giving
# autograd's result.
# Usage: bash tests/interp/test_tutorial_blitz.sh build/nnrepl
bin=${1:?usage: test_tutorial_blitz.sh path/to/nnrepl}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
root=$(cd "$(dirname "$0")/../.." && pwd)
blitz=$root/scripts/tutorials/blitz
ex=$root/scripts/tutorials/examples
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$root/tests/interp/lib.sh"

# ---- tensor_tutorial ----
out=$("$bin" "$blitz/tensor_tutorial.lua" 2>&1)
check "tensor: exit 0" [ $? -eq 0 ]
check "tensor: ones_like keeps int64" has "$out" $'Ones Tensor: \n tensor([[1, 1],\n        [1, 1]]) '
check "tensor: attributes" has "$out" $'Shape of tensor: torch.Size([3, 4])\nDatatype of tensor: torch.float32\nDevice tensor is stored on: cpu'
check "tensor: column 1 zeroed" has "$out" $'tensor([[1., 0., 1., 1.],\n        [1., 0., 1., 1.],'
check "tensor: cat along dim 1" has "$out" 'tensor([[1., 0., 1., 1., 1., 0., 1., 1., 1., 0., 1., 1.],'
check "tensor: matmul with the transpose is 3" has "$out" $'tensor @ tensor.T \n tensor([[3., 3., 3., 3.],'
check "tensor: add_(5)" has "$out" $'tensor([[6., 5., 6., 6.],\n        [6., 5., 6., 6.],\n        [6., 5., 6., 6.],\n        [6., 5., 6., 6.]])'

# ---- autograd_tutorial ----
out=$("$bin" "$blitz/autograd_tutorial.lua" 2>&1)
check "autograd: exit 0" [ $? -eq 0 ]
check "autograd: dQ/da = 9a^2, dQ/db = -2b" [ "$(count "$out" '^tensor\(\[True, True\]\)$')" -eq 2 ]
check "autograd: requires_grad lines" has "$out" $'Does `a` require gradients?: False\nDoes `b` require gradients?: True'

# ---- neural_networks_tutorial ----
out=$("$bin" "$blitz/neural_networks_tutorial.lua" 2>&1)
check "nn: exit 0" [ $? -eq 0 ]
check "nn: the tree" has "$out" $'Net(\n  (conv1): Conv2d(1, 6, kernel_size=(5, 5), stride=(1, 1))\n  (conv2): Conv2d(6, 16, kernel_size=(5, 5), stride=(1, 1))\n  (fc1): Linear(in_features=400, out_features=120, bias=True)'
check "nn: 10 parameters, conv1's weight" has "$out" $'\n10\ntorch.Size([6, 1, 5, 5])\n'
check "nn: output [1, 10] from Addmm" matches "$out" 'grad_fn=<AddmmBackward0>\)$'
check "nn: the loss" matches "$out" '^tensor\([0-9]+\.[0-9]{4}, grad_fn=<MseLossBackward0>\)$'
chain=$(grep -oE '^<[A-Za-z0-9]+ object at 0x' <<<"$out" | tr '\n' ' ')
check "nn: the grad_fn chain as PyTorch prints it ($chain)" [ "$chain" = "<MseLossBackward0 object at 0x <AddmmBackward0 object at 0x <AccumulateGrad object at 0x " ]
check "nn: no grad before backward" has "$out" $'conv1.bias.grad before backward\nnil\nconv1.bias.grad after backward\ntensor(['

# ---- cifar10_tutorial on a tiny CIFAR-10 (tests/interp/make_tiny_cifar10.lua): 40 images in
# each training batch file, 20 test ----
"$bin" "$(dirname "$0")/make_tiny_cifar10.lua" "$tmp/c/data" 40 20 || { echo "cannot make the dataset"; exit 1; }
out=$(cd "$tmp/c" && BLITZ_EPOCHS=3 BLITZ_LOG_EVERY=10 "$bin" "$blitz/cifar10_tutorial.lua" 2>"$tmp/c/err")
rc=$?
check "cifar10: exit 0" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || cat "$tmp/c/err"
check "cifar10: 4 training labels" matches "$(head -n1 <<<"$out")" '^(plane|car  |bird |cat  |deer |dog  |frog |horse|ship |truck)( (plane|car  |bird |cat  |deer |dog  |frog |horse|ship |truck)){3}$'
check "cifar10: 5 loss lines an epoch, 50 batches of 4" [ "$(count "$out" '^\[[123], +[1-5]0\] loss: [0-9]\.[0-9]{3}$')" -eq 15 ]
check "cifar10: line format" has "$out" "[3,    50] loss: "
first=$(sed -nE 's/^\[1, +[0-9]+\] loss: ([0-9.]+)$/\1/p' <<<"$out" | awk '{ s += $1 } END { print s / NR }')
last=$(sed -nE 's/^\[3, +[0-9]+\] loss: ([0-9.]+)$/\1/p' <<<"$out" | awk '{ s += $1 } END { print s / NR }')
check "cifar10: first epoch near ln 10 = 2.303 ($first)" close "$first" 2.303 0.1
check "cifar10: loss falls ($first -> $last)" less "$last" "$first"
check "cifar10: Finished Training" has "$out" "Finished Training"
check "cifar10: the test set's first labels, in order" has "$out" "GroundTruth:  plane car   bird  cat  "
check "cifar10: predicted line" matches "$out" '^Predicted:  [a-z ]{23}$'
check "cifar10: accuracy line" matches "$out" '^Accuracy of the network on the 10000 test images: [0-9]+ %$'
check "cifar10: a line per class, 2 test images each" [ "$(count "$out" '^Accuracy for class: [a-z ]{5} is (0|50|100)\.0 %$')" -eq 10 ]
check "cifar10: device line" [ "$(tail -n1 <<<"$out")" = "$([ "$(device_of "$bin")" = cuda ] && echo cuda:0 || echo cpu)" ]
keys=$("$bin" -e "local sd = torch.load('$tmp/c/cifar_net.pth'); local n = 0; for k in pairs(sd) do n = n + 1 end
  print(n, sd['conv1.weight'].shape, sd['fc3.bias'].shape)" 2>&1)
check "cifar10: cifar_net.pth loads back ($keys)" test "$keys" = $'10\ttorch.Size([6, 3, 5, 5])\ttorch.Size([10])'
mkdir -p "$tmp/none"
(cd "$tmp/none" && "$bin" "$blitz/cifar10_tutorial.lua" >/dev/null 2>"$tmp/none/err")
check "cifar10: missing data fails" [ $? -ne 0 ]
check "cifar10: missing data message" grep -qF "CIFAR10: data_batch_1.bin not found in ./data/cifar-10-batches-bin or ./data: download=true, but nnrepl downloads nothing" "$tmp/none/err"

# ---- data_parallel_tutorial: 100 rows in batches of 30 (one device: the model sees each whole) ----
out=$("$bin" "$blitz/data_parallel_tutorial.lua" 2>&1)
check "dp: exit 0" [ $? -eq 0 ]
check "dp: 3 batches of 30" [ "$(count "$out" '^Outside: input size torch.Size\(\[30, 5\]\) output_size torch.Size\(\[30, 2\]\)$')" -eq 3 ]
check "dp: then 10" [ "$(tail -n1 <<<"$out")" = "Outside: input size torch.Size([10, 5]) output_size torch.Size([10, 2])" ]
ngpu=$("$bin" -e 'io.write(math.max(1, torch.cuda.device_count()))') # DataParallel splits each batch over the GPUs
check "dp: the model's line, once a batch on each device" [ "$(count "$out" $'^\tIn Model: input size torch.Size\\(\\[[0-9]+, 5\\]\\) output size')" -eq $((4 * ngpu)) ]

# ---- the polynomial programs, 300 steps ----
poly() { POLY_STEPS=${2:-300} "$bin" "$ex/$1.lua" 2>&1; }
loss_at() { sed -nE "s/^$2 ([0-9.e+-]+)\$/\\1/p" <<<"$1"; }
coef() { sed -nE "s/^Result: y = ([-0-9.e]+) \+ ([-0-9.e]+) .*/\\$2/p" <<<"$1"; }
num='-?[0-9]+\.[0-9]+(e-?[0-9]+)?'
for p in polynomial_tensor polynomial_autograd polynomial_nn polynomial_optim polynomial_module polynomial_custom_function; do
  out=$(poly $p)
  check "$p: exit 0" [ $? -eq 0 ]
  check "$p: 3 loss lines" [ "$(count "$out" "^(99|199|299) $num\$")" -eq 3 ]
  check "$p: loss falls" less "$(loss_at "$out" 299)" "$(loss_at "$out" 99)"
  eval "out_$p=\$out"
done
for p in polynomial_tensor polynomial_autograd polynomial_nn polynomial_optim polynomial_module; do
  eval "o=\$out_$p"
  check "$p: result line" matches "$o" "^Result: y = $num \\+ $num x \\+ $num x\\^2 \\+ $num x\\^3\$"
done
check "polynomial_autograd: device line" has "$out_polynomial_autograd" "Using $(device_of "$bin") device"
check "polynomial_custom_function: result line" matches "$out_polynomial_custom_function" "^Result: y = $num \\+ $num \\* P3\\($num \\+ $num x\\)\$"
# the same seed draws the same a, b, c, d: the hand-made gradients give autograd's fit
for k in 1 2; do
  check "tensor = autograd, coefficient $k" close "$(coef "$out_polynomial_tensor" $k)" "$(coef "$out_polynomial_autograd" $k)" 1e-5
done
out=$(poly polynomial_optim 2000)
check "polynomial_optim: RMSprop fits sin: b near 0.857 ($(coef "$out" 2))" close "$(coef "$out" 2)" 0.857 0.02
out=$(poly dynamic_net 4000)
check "dynamic_net: exit 0" [ $? -eq 0 ]
check "dynamic_net: lines every 2000" [ "$(count "$out" "^(1999|3999) $num\$")" -eq 2 ]
check "dynamic_net: loss falls" less "$(loss_at "$out" 3999)" "$(loss_at "$out" 1999)"
check "dynamic_net: result" matches "$out" "^Result: y = $num \\+ $num x \\+ $num x\\^2 \\+ $num x\\^3 \\+ $num x\\^4 \\? \\+ $num x\\^5 \\?\$"

finish
