#!/usr/bin/env bash
# The PyTorch recipes' ports (scripts/tutorials/recipes/*.lua), each run in a scratch folder (CPU,
# small sizes through their environment variables): shapes and state_dict keys worked out by hand
# from the layers' definitions, files saved and loaded back equal to what was saved, the
# meta-device shapes, swap_tensors' results, and the training losses where the start is known
# (an untrained 10-class classifier starts near ln 10 = 2.303).
# Usage: bash tests/interp/test_tutorial_recipes.sh build/nnrepl
bin=${1:?usage: test_tutorial_recipes.sh path/to/nnrepl}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=$root/scripts/tutorials/recipes
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$root/tests/interp/lib.sh"
run() { (cd "$tmp" && "$bin" "$dir/$1" 2>"$tmp/err"); }

cnn_tree=$'Net(\n  (conv1): Conv2d(3, 6, kernel_size=(5, 5), stride=(1, 1))\n  (pool): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)\n  (conv2): Conv2d(6, 16, kernel_size=(5, 5), stride=(1, 1))\n  (fc1): Linear(in_features=400, out_features=120, bias=True)\n  (fc2): Linear(in_features=120, out_features=84, bias=True)\n  (fc3): Linear(in_features=84, out_features=10, bias=True)\n)'

# ---- defining_a_neural_network: 28 -> 26 -> 24 -> pool 12: 64 * 12 * 12 = 9216 = fc1's input ----
out=$(run defining_a_neural_network.lua)
check "defining: exit 0" [ $? -eq 0 ] || cat "$tmp/err"
check "defining: the tree" has "$out" $'  (conv1): Conv2d(1, 32, kernel_size=(3, 3), stride=(1, 1))\n  (conv2): Conv2d(32, 64, kernel_size=(3, 3), stride=(1, 1))\n  (dropout1): Dropout2d(p=0.25, inplace=False)'
check "defining: log-probabilities of 10 labels" has "$out" "result: torch.Size([1, 10]), exp(result) sums to 1.0000"
check "defining: grad_fn" has "$out" "grad_fn=<LogSoftmaxBackward0>)"

# ---- what_is_state_dict: keys in registration order, sizes from the layers ----
out=$(run what_is_state_dict.lua)
check "state_dict: exit 0" [ $? -eq 0 ] || cat "$tmp/err"
check "state_dict: the tree" has "$out" "$cnn_tree"
check "state_dict: keys and sizes" has "$out" $'Model\'s state_dict:\nconv1.weight \t torch.Size([6, 3, 5, 5])\nconv1.bias \t torch.Size([6])\nconv2.weight \t torch.Size([16, 6, 5, 5])\nconv2.bias \t torch.Size([16])\nfc1.weight \t torch.Size([120, 400])\nfc1.bias \t torch.Size([120])\nfc2.weight \t torch.Size([84, 120])\nfc2.bias \t torch.Size([84])\nfc3.weight \t torch.Size([10, 84])\nfc3.bias \t torch.Size([10])\n\nOptimizer\'s state_dict:'
check "state_dict: the param group" matches "$out" "^param_groups 	 \[\{.*'lr': 0.001, .*'momentum': 0.9, .*'params': \[0, 1, 2, 3, 4, 5, 6, 7, 8, 9\]"

# ---- saving / loading ----
out=$(run saving_and_loading_models_for_inference.lua)
check "inference: exit 0" [ $? -eq 0 ] || cat "$tmp/err"
check "inference: both reloads equal" has "$out" "state_dict reload: max difference 0; entire model reload: Net, training=false, max difference 0"
check "inference: the files" [ -s "$tmp/state_dict_model.pt" ] && [ -s "$tmp/entire_model.pt" ]
out=$(run saving_and_loading_a_general_checkpoint.lua)
check "checkpoint: exit 0" [ $? -eq 0 ] || cat "$tmp/err"
check "checkpoint: loaded back" has "$out" "epoch 5, loss 0.4, 10 model entries, 10 optimizer parameters, lr 0.001, momentum 0.9, max difference 0"
out=$(run saving_multiple_models_in_one_file.lua)
check "multiple: exit 0" [ $? -eq 0 ] || cat "$tmp/err"
check "multiple: keys and weights" has "$out" "keys: modelA_state_dict modelB_state_dict optimizerA_state_dict optimizerB_state_dict; modelA vs netA 0, modelB vs netB 0, netA vs netB differ"
out=$(run warmstarting_model_using_parameters_from_a_different_model.lua)
check "warmstart: exit 0" [ $? -eq 0 ] || cat "$tmp/err"
check "warmstart: all keys matched" [ "$(head -n 1 <<<"$out")" = "<All keys matched successfully>" ]
check "warmstart: partial load" has "$out" "_IncompatibleKeys(missing_keys=['fc2.bias', 'fc3.weight', 'fc3.bias'], unexpected_keys=['fc2.bias_renamed'])"
check "warmstart: netB is netA" has "$out" "netB vs netA: max difference 0"
out=$(run save_load_across_devices.lua)
check "devices: exit 0" [ $? -eq 0 ] || cat "$tmp/err"
check "devices: CPU load" has "$out" "load on CPU: fc1.weight on cpu, max difference 0"
check "devices: DataParallel's module" has "$out" "DataParallel's module: fc1.weight on cpu, max difference 0"
if [ "$(device_of "$bin")" = cuda ]; then
  check "devices: GPU loads" has "$out" "load on cuda:0: fc1.weight on cuda:0, max difference 0"
fi

# ---- zeroing_out_gradients on a tiny CIFAR-10: 5 x 40 images, batches of 4 = 50 per epoch ----
"$bin" "$root/tests/interp/make_tiny_cifar10.lua" "$tmp/data" 40 20 >/dev/null || echo "FAIL: making the data"
out=$(cd "$tmp" && RECIPE_EPOCHS=2 RECIPE_LOG_EVERY=10 "$bin" "$dir/zeroing_out_gradients.lua" 2>"$tmp/err")
check "zeroing: exit 0" [ $? -eq 0 ] || cat "$tmp/err"
check "zeroing: 5 lines per epoch" [ "$(count "$out" '^\[[12], +[0-9]+\] loss: [0-9]\.[0-9]{3}$')" -eq 10 ]
check "zeroing: the last of epoch 2" has "$out" "[2,    50] loss: "
first=$(sed -nE '1s/.*loss: ([0-9.]+)$/\1/p' <<<"$out")
check "zeroing: first loss near ln 10 ($first)" close "$first" 2.303 0.15
check "zeroing: Finished Training" [ "$(tail -n 1 <<<"$out")" = "Finished Training" ]

# ---- reasoning_about_shapes: out = in - k + 1, pool halves ----
out=$(run reasoning_about_shapes.lua)
check "shapes: exit 0" [ $? -eq 0 ] || cat "$tmp/err"
check "shapes: small input" has "$out" "tensor(..., device='meta', size=(2, 5, 9, 9), grad_fn=<ConvolutionBackward0>)"
check "shapes: huge input" has "$out" "size=(1024, 5, 65535, 65535)"
check "shapes: two timings" [ "$(count "$out" '^Time taken: [0-9.e-]+$')" -eq 2 ]
for s in "Conv2d(3, 6, kernel_size=(5, 5), stride=(1, 1)) is torch.Size([1024, 6, 28, 28])." \
  "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False) is torch.Size([1024, 6, 14, 14])." \
  "Conv2d(6, 16, kernel_size=(5, 5), stride=(1, 1)) is torch.Size([1024, 16, 10, 10])." \
  "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False) is torch.Size([1024, 16, 5, 5])." \
  "Linear(in_features=400, out_features=120, bias=True) is torch.Size([1024, 120])." \
  "Linear(in_features=84, out_features=10, bias=True) is torch.Size([1024, 10])."; do
  check "shapes: $s" has "$out" "Shape of output to $s"
done
check "shapes: the whole net last" has "$out" $'(fc3): Linear(in_features=84, out_features=10, bias=True)\n) is torch.Size([1024, 10]).'
check "shapes: 8 hooks fired (pool twice, the net last)" [ "$(count "$out" '^Shape of output to ')" -eq 8 ]

# ---- changing_default_device ----
out=$(run changing_default_device.lua)
check "default device: exit 0" [ $? -eq 0 ] || cat "$tmp/err"
d=meta; [ "$(device_of "$bin")" = cuda ] && d=cuda:0
check "default device: cpu, then 4 x $d" [ "$out" = "cpu"$'\n'"$d"$'\n'"$d"$'\n'"$d"$'\n'"$d" ]

# ---- module_load_state_dict_tips ----
out=$(run module_load_state_dict_tips.lua)
check "load tips: exit 0" [ $? -eq 0 ] || cat "$tmp/err"
check "load tips: meta before" has "$out" "(extra) before loading: meta_m's linears.0.weight on meta, m's on cpu"
check "load tips: assigned after" has "$out" "(extra) after loading: meta_m's on cpu (requires_grad=true), max difference 0; m's max difference 0"

# ---- tensorboard_with_pytorch: 10 steps of SGD on y = -5x + noise; the loss must fall ----
out=$(run tensorboard_with_pytorch.lua)
check "tensorboard: exit 0" [ $? -eq 0 ] || cat "$tmp/err"
check "tensorboard: the line" matches "$out" '^\(extra\) logged 10 losses under runs/[A-Z][a-z]{2}[0-9]{2}_[0-9]{2}-[0-9]{2}-[0-9]{2}_'
first=$(sed -nE 's/.*first ([0-9.]+), last.*/\1/p' <<<"$out") last=$(sed -nE 's/.*last ([0-9.]+)$/\1/p' <<<"$out")
check "tensorboard: loss falls ($first -> $last)" less "$last" "$first"
check "tensorboard: one event file" [ "$(find "$tmp/runs" -name 'events.out.tfevents.*' | wc -l)" -eq 1 ]

# ---- swap_tensors ----
out=$(run swap_tensors.lua)
check "swap: exit 0" [ $? -eq 0 ] || cat "$tmp/err"
check "swap: before/after" has "$out" $'Before swapping, t1: tensor([0, 1]), t2: tensor([0, 1, 2])\nAfter swapping, t1: tensor([0, 1, 2]), t2: tensor([0, 1])'
# lines 4-5: the first weight's values; 10-11: the module's after 2 *; 13-14: the optimizer's
nums() { sed -n "$1" <<<"$out" | grep -oE -- '-?[0-9]+\.[0-9]+' | tr '\n' ' '; }
check "swap: the optimizer keeps the old weight" [ "$(nums 4,5p)" = "$(nums 13,14p)" ]
read -r a b <<<"$(nums 4,5p)"; read -r c d <<<"$(nums 10,11p)"
check "swap: the module's is doubled ($a $b -> $c $d)" awk_true "($c - 2 * $a)^2 < 1e-7 && ($d - 2 * $b)^2 < 1e-7"
check "swap: the optimizer sees the swapped weight" has "$out" "(extra) after swap_tensors, the optimizer holds mod.weight: true"

# ---- amp_recipe at small sizes ----
out=$(cd "$tmp" && RECIPE_AMP_BATCH=16 RECIPE_AMP_SIZE=32 RECIPE_AMP_BATCHES=4 RECIPE_AMP_EPOCHS=2 "$bin" "$dir/amp_recipe.lua" 2>"$tmp/err")
check "amp: exit 0" [ $? -eq 0 ] || cat "$tmp/err"
check "amp: two timings" [ "$(count "$out" '^Total execution time = [0-9]+\.[0-9]{3} sec$')" -eq 2 ]
low=bfloat16; [ "$(device_of "$bin")" = cuda ] && low=float16
check "amp: autocast's output dtype, loss in float32" matches "$out" "dtype torch.float32; output dtype torch.$low$"
check "amp: checkpoint" has "$out" "(extra) checkpoint: model optimizer scaler"
finish
