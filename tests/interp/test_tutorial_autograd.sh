#!/usr/bin/env bash
# The autograd tutorials of pytorch/tutorials ported to scripts/tutorials/autograd/, end to end:
# custom Functions with double backward (every gradcheck / gradgradcheck passes, the printed
# first derivatives are 2x at 1, e^1, 3*2^2, SinhBad's has no graph); the fused conv+BN
# Function's gradchecks and its fused and unfused training on a tiny generated MNIST
# (tests/interp/make_tiny_mnist.lua: the train loss falls, the accuracy rises) and a clear
# error without the data; saved tensor hooks (pack/unpack calls, the double access failing,
# the on-disk files removed after backward); parametrizations (the parametrization computed at
# each read and once inside cached(), the printed modules, removal); the optimizer stepped in
# backward on a tiny ViT (every parameter updated, no gradient left).
# Usage: bash tests/interp/test_tutorial_autograd.sh build/nnrepl
bin=${1:?usage: test_tutorial_autograd.sh path/to/nnrepl}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=$root/scripts/tutorials/autograd
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$root/tests/interp/lib.sh"

# ---- custom_function_double_backward ----
out=$("$bin" "$dir/custom_function_double_backward.lua" 2>&1)
check "double backward: exit 0" [ $? -eq 0 ]
check "double backward: 8 checks pass" [ "$(count "$out" $'^grad(grad)?check (Square|Exp|sinh|Cube):\ttrue$')" -eq 8 ]
check "double backward: Square grad_x = 2x at 1" has "$out" $'Square grad_x:\ttensor(2., grad_fn=<MulBackward0>)'
check "double backward: Exp grad_x = e" has "$out" $'Exp grad_x:\ttensor(2.7183, dtype=torch.float64, grad_fn=<MulBackward0>)'
check "double backward: sinh grad_x has a graph" has "$out" $'sinh grad_x has a graph:\ttrue'
check "double backward: SinhBad grad_x has none" has "$out" $'SinhBad grad_x has a graph:\tfalse'
check "double backward: Cube grad_x = 3x^2 through CubeBackward" has "$out" $'Cube grad_x:\ttensor(12., dtype=torch.float64, grad_fn=<CubeBackwardBackward>)'

# ---- custom_function_conv_bn ----
"$bin" "$root/tests/interp/make_tiny_mnist.lua" "$tmp/data" 256 100 || { echo "FAIL: making the data"; exit 1; }
out=$(cd "$tmp" && CONV_BN_DATA="$tmp/data" CONV_BN_EPOCHS=2 CONV_BN_BATCH=64 "$bin" "$dir/custom_function_conv_bn/main.lua" 2>&1)
check "conv_bn: exit 0" [ $? -eq 0 ]
check "conv_bn: 3 gradchecks pass" [ "$(count "$out" $'^gradcheck (Conv2D|BatchNorm|FusedConvBN2DFunction):\ttrue$')" -eq 3 ]
check "conv_bn: 8 train lines" [ "$(count "$out" $'^Train Epoch: [01] \\[(0|128)/256 \\((0|50)%\\)\\]\tLoss: [0-9]+\\.[0-9]{6}$')" -eq 8 ]
check "conv_bn: 4 test lines" [ "$(count "$out" '^Test set: Average loss: [0-9]+\.[0-9]{4}, Accuracy: [0-9]+/100 \([0-9]+%\)$')" -eq 4 ]
losses=$(sed -nE 's/^Train Epoch: .*Loss: //p' <<<"$out")
for run in 0 1; do # fused, then unfused
  first=$(sed -n "$((run * 4 + 1))p" <<<"$losses") last=$(sed -n "$((run * 4 + 4))p" <<<"$losses")
  check "conv_bn run $run: train loss from chance ($first) falls below 0.5 ($last)" awk_true "$first > 2.0 && $last < 0.5"
done
acc=$(sed -nE 's/^Test set: .*Accuracy: ([0-9]+)\/100 .*/\1/p' <<<"$out")
check "conv_bn: accuracy well above chance after each epoch ($(tr '\n' ' ' <<<"$acc"))" awk_true "$(awk '$1 < 80 { bad = 1 } END { print bad ? 0 : 1 }' <<<"$acc")"
if [ "$(device_of "$bin")" = cuda ]; then check "conv_bn: the memory line" matches "$out" '^fused peak memory: [0-9.]+GB, unfused peak memory: [0-9.]+GB$'
else check "conv_bn: the memory line" has "$out" "fused peak memory: not measured on the CPU"; fi
err=$(cd "$tmp" && CONV_BN_DATA="$tmp/none" "$bin" "$dir/custom_function_conv_bn/main.lua" 2>&1 >/dev/null)
check "conv_bn: missing data fails" [ $? -ne 0 ]
check "conv_bn: the error names the files and the folder" matches "$err" "downloads nothing: put train-images-idx3-ubyte.*$tmp/none/MNIST/raw"

# ---- autograd_saved_tensors_hooks ----
out=$(cd "$tmp" && "$bin" "$dir/autograd_saved_tensors_hooks.lua" 2>&1)
check "saved hooks: exit 0" [ $? -eq 0 ]
check "saved hooks: _saved_other is b" [ "$(sed -n 2p <<<"$out")" = "tensor([1., 1., 1., 1., 1.], requires_grad=True)" ]
check "saved hooks: identity lines" [ "$(sed -n 3,6p <<<"$out" | tr '\n' ' ')" = "false false true false " ]
check "saved hooks: pack a, pack b, then unpack both" [ "$(grep -E '^(Packing|Unpacking)' <<<"$out" | tr '\n' '|')" = \
  "Packing tensor([1., 1., 1., 1., 1.], requires_grad=True)|Packing tensor([2., 2., 2., 2., 2.], grad_fn=<MulBackward0>)|Unpacking tensor([1., 1., 1., 1., 1.], requires_grad=True)|Unpacking tensor([2., 2., 2., 2., 2.], grad_fn=<MulBackward0>)|" ]
check "saved hooks: the CPU round trip and save_on_cpu give the gradients" [ "$(sed -n 11,12p <<<"$out" | tr '\n' ' ')" = "true true " ]
check "saved hooks: the first access reads the file" has "$out" "tensor([1., 1., 1., 1., 1.], requires_grad=True)"$'\n'"Double access failed!"
check "saved hooks: one file while the graph lives" has "$out" "files while the graph lives: 1"
check "saved hooks: none after backward" has "$out" "files after backward: 0"
check "saved hooks: the gradient through the disk" has "$out" "gradient is 1 - tanh(x)^2: true"

# ---- parametrizations ----
out=$("$bin" "$dir/parametrizations.lua" 2>&1)
check "parametrizations: exit 0" [ $? -eq 0 ]
check "parametrizations: computed at registration and at each of 3 reads" has "$out" \
  "Computing the Parametrization"$'\n'"Here, layer.weight is recomputed every time we call it"$'\n'"Computing the Parametrization"$'\n'"Computing the Parametrization"$'\n'"Computing the Parametrization"$'\n'"Here, it is computed just the first time"
check "parametrizations: once inside cached()" has "$out" "is called"$'\n'"Computing the Parametrization"$'\n'"Cayley: X is orthogonal"
check "parametrizations: 5 computations in all" [ "$(count "$out" '^Computing the Parametrization$')" -eq 5 ]
check "parametrizations: the parametrized module prints" has "$out" "ParametrizedLinear("$'\n'"  in_features=3, out_features=3, bias=True"$'\n'"  (parametrizations): ModuleDict("$'\n'"    (weight): ParametrizationList("$'\n'"      (0): Symmetric()"
check "parametrizations: named parameters" matches "$out" $'^parametrizations.weight.original\tParameter containing:$'
for line in "Cayley: X is orthogonal" "matrix_exp of a skew matrix: X is orthogonal" \
  "matrix_exp of a symmetric matrix: X is symmetric positive definite" "right_inverse: layer.weight == X" \
  "right_inverse through Skew and CayleyMap: layer_orthogonal.weight == X"; do
  check "parametrizations: $line" has "$out" "$line"
done
check "parametrizations: leave_parametrized=false keeps the original (upper triangle)" matches "$(tail -n 3 <<<"$out" | tr '\n' '|')" \
  '^tensor\(\[\[0\.0000, -?[0-9.]+, -?[0-9.]+\],\| +\[0\.0000, 0\.0000, -?[0-9.]+\],\| +\[0\.0000, 0\.0000, 0\.0000\]\], requires_grad=True\)\|$'
check "parametrizations: 4 unparametrized and 2 parametrized prints at the end" [ "$(count "$(tail -n 42 <<<"$out")" "^(Parametrized)?Linear\\(")" -eq 6 ]

# ---- optimizer_step_in_backward ----
out=$(OPT_IN_BWD_TINY=1 "$bin" "$dir/optimizer_step_in_backward.lua" 2>&1)
check "optimizer in backward: exit 0" [ $? -eq 0 ]
check "optimizer in backward: the usual loop updates every parameter" has "$out" "optimizer after backward: 20 of 20 parameters changed, 0 gradients left"
check "optimizer in backward: the hooks update every parameter, no gradient left" has "$out" "optimizer in backward: 20 of 20 parameters changed, 0 gradients left"
if [ "$(device_of "$bin")" = cuda ]; then check "optimizer in backward: memory line" matches "$out" '^optimizer in backward: peak memory [0-9.]+GB$'
else check "optimizer in backward: memory line" has "$out" "optimizer in backward: peak memory: not measured on the CPU"; fi

finish
