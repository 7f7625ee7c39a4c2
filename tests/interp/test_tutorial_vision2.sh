#!/usr/bin/env bash
# The vision2 tutorial ports (scripts/tutorials/) end to end on tiny data made here:
# knowledge_distillation_tutorial on a tiny CIFAR-10 (make_tiny_cifar10.lua) for 3 epochs of each
# training (parameter counts and the seed-42 norm known here, the teacher's loss falls),
# fgsm_tutorial on a tiny MNIST against a LeNet trained here (epsilon 0 is the clean accuracy,
# the attack lowers it), transfer_learning_tutorial and finetuning_torchvision_models_tutorial on a
# folder of 16 ants/bees JPEGs with random weights (TL_PRETRAINED=0, FT_PRETRAINED=0); missing
# data, checkpoints and pretrained weights give clear errors.
# Usage: bash tests/interp/test_tutorial_vision2.sh build/nnrepl
bin=${1:?usage: test_tutorial_vision2.sh path/to/nnrepl}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
root=$(cd "$(dirname "$0")/../.." && pwd)
tut=$root/scripts/tutorials
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$root/tests/interp/lib.sh"
num='[0-9]+\.[0-9]+(e-?[0-9]+)?'

# ---- knowledge distillation ----
mkdir -p "$tmp/kd"
"$bin" "$root/tests/interp/make_tiny_cifar10.lua" "$tmp/kd/data" 16 40 || { echo "FAIL: making the data"; exit 1; }
out=$(cd "$tmp/kd" && KD_EPOCHS=3 "$bin" "$tut/knowledge_distillation_tutorial/main.lua" 2>&1)
check "kd: exit 0" [ $? -eq 0 ]
check "kd: 5 trainings of 3 epochs" test "$(count "$out" "^Epoch [1-3]/3, Loss: $num$")" -eq 15
check "kd: 5 tests" test "$(count "$out" '^Test Accuracy: [0-9]+\.[0-9]{2}%$')" -eq 5
# 40 test images: accuracies are multiples of 2.5
check "kd: accuracies over 40 images" test "$(count "$out" '^Test Accuracy: [0-9]+\.(00|50)%$')" -eq 5
# by hand: convs 3584 + 73792 + 36928 + 18464, linears 1049088 + 5130; convs 448 + 2320, linears 262400 + 2570
check "kd: DeepNN parameters" has "$out" "DeepNN parameters: 1,186,986"
check "kd: LightNN parameters" has "$out" "LightNN parameters: 267,738"
# the students' first layer is the first draw after manual_seed(42): a Conv2d(3, 16, 3) made here
norm=$("$bin" -e "local U = require 'nn_util'; torch.manual_seed(42); io.write(U.pyfloat(nn.Conv2d(3, 16, 3).weight:norm():item()))")
check "kd: nn_light's norm is seed 42's ($norm)" has "$out" "Norm of 1st layer of nn_light: $norm"
check "kd: new_nn_light's norm" has "$out" "Norm of 1st layer of new_nn_light: $norm"
check "kd: modified_light_nn's norm" has "$out" "Norm of 1st layer: $norm"
dn=$(sed -nE 's/^Norm of 1st layer for deep_nn: (.*)$/\1/p' <<<"$out")
check "kd: the modified teacher loaded the teacher ($dn)" has "$out" "Norm of 1st layer for modified_deep_nn: $dn"
e1=$(grep -m1 -E '^Epoch 1/3' <<<"$out" | sed -E 's/.*Loss: //') e3=$(grep -m1 -E '^Epoch 3/3' <<<"$out" | sed -E 's/.*Loss: //')
check "kd: the teacher's loss falls ($e1 -> $e3)" less "$e3" "$e1"
check "kd: summary" test "$(count "$out" '^Student accuracy with CE \+ (KD|CosineLoss|RegressorMSE): [0-9]+\.[0-9]{2}%$')" -eq 4
err=$(cd "$tmp" && "$bin" "$tut/knowledge_distillation_tutorial/main.lua" 2>&1)
check "kd: no CIFAR-10: exit 1" [ $? -eq 1 ]
check "kd: no CIFAR-10: says what to put where" has "$err" "CIFAR10: data_batch_1.bin not found in ./data/cifar-10-batches-bin"

# ---- fgsm ----
mkdir -p "$tmp/fg/run/data"
"$bin" "$root/tests/interp/make_tiny_mnist.lua" "$tmp/fg/data" 256 50 || { echo "FAIL: making the data"; exit 1; }
# a LeNet trained briefly here (the tutorial's checkpoint is not available), and its clean accuracy
clean=$(cd "$tmp/fg" && "$bin" -e "package.path = '$tut/fgsm_tutorial/?.lua;' .. package.path
  local tv = require 'torchvision'
  local Net = require 'model'
  torch.manual_seed(0)
  local loader = torch.utils.data.DataLoader(tv.datasets.MNIST('data', { train = true, transform = tv.transforms.ToTensor() }),
    { batch_size = 32, shuffle = true })
  local model = Net()
  local opt = optim.SGD(model:parameters(), { lr = 0.05, momentum = 0.9 })
  for epoch = 1, 4 do
    for x, y in loader:iter() do opt:zero_grad(); F.nll_loss(model(x), y):backward(); opt:step() end
  end
  torch.save(model:state_dict(), 'run/data/lenet_mnist_model.pth')
  model:eval()
  local test = tv.datasets.MNIST('data', { train = false, transform = tv.transforms.ToTensor() })
  local correct = 0
  for i = 0, #test - 1 do
    local x, y = test[i][1], test[i][2]
    if model(x:unsqueeze(0)):argmax():item() == y then correct = correct + 1 end
  end
  io.write(correct)" 2>&1)
out=$(cd "$tmp/fg/run" && "$bin" "$tut/fgsm_tutorial/main.lua" 2>&1)
check "fgsm: exit 0" [ $? -eq 0 ]
cuda=$([ "$(device_of "$bin")" = cuda ] && echo True || echo False)
check "fgsm: CUDA line" has "$out" "CUDA Available:  $cuda"
check "fgsm: 7 epsilons in format" test "$(count "$out" '^Epsilon: (0|0\.[0-9]+)	Test Accuracy = [0-9]+ / 50 = [0-9.]+$')" -eq 7
check "fgsm: epsilon 0 is the clean accuracy ($clean / 50)" matches "$out" "^Epsilon: 0	Test Accuracy = $clean / 50 = "
a0=$(sed -nE 's/^Epsilon: 0	.* = ([0-9.]+)$/\1/p' <<<"$out") a3=$(sed -nE 's/^Epsilon: 0\.3	.* = ([0-9.]+)$/\1/p' <<<"$out")
check "fgsm: the attack lowers the accuracy ($a0 -> $a3)" less "$a3" "$a0"
check "fgsm: 20 / 50 printed as Python does" awk_true "$(count "$out" '= 0\.[0-9]+$|= 1\.0$|= 0\.0$') == 7"
check "fgsm: the plot's 7 points" test "$(count "$out" '^(0|0\.[0-9]+) [0-9.]+$')" -eq 7
ex0=$(grep -E '^Eps: 0  ' <<<"$out")
check "fgsm: epsilon 0 examples unchanged" test "$(count "$ex0" '^Eps: 0  ([0-9]) -> \1$')" -eq "$(count "$ex0" .)"
exn=$(grep -E '^Eps: 0\.' <<<"$out")
check "fgsm: other examples are adversarial" test "$(count "$exn" '^Eps: 0\.[0-9]+  ([0-9]) -> \1$')" -eq 0
check "fgsm: some adversarial examples" less 0 "$(count "$exn" .)"
err=$(cd "$tmp/fg/run" && FGSM_PRETRAINED=missing.pth "$bin" "$tut/fgsm_tutorial/main.lua" 2>&1)
check "fgsm: no checkpoint: exit 1" [ $? -eq 1 ]
check "fgsm: no checkpoint: names it" has "$err" "torch.load: cannot open 'missing.pth'"
err=$(cd "$tmp" && "$bin" "$tut/fgsm_tutorial/main.lua" 2>&1)
check "fgsm: no MNIST: says where the files go" has "$err" "into ../data/MNIST/raw"

# ---- the ants/bees folder for the two finetuning tutorials ----
mkdir -p "$tmp/tl"
(cd "$tmp/tl" && "$bin" -e "local tv = require 'torchvision'
  torch.manual_seed(0)
  for split, k in pairs({ train = 4, val = 4 }) do
    for c, cls in ipairs({ 'ants', 'bees' }) do
      os.execute('mkdir -p data/hymenoptera_data/' .. split .. '/' .. cls)
      for i = 1, k do -- ants reddish, bees greenish, sizes vary
        local img = torch.rand(3, 60 + 10 * i, 80) * 0.3
        img[c - 1]:add_(0.6)
        local name = (split == 'val' and cls == 'bees' and i == 1) and '72100438_73de9f17af' or (cls .. i)
        tv.utils.save_image(img, 'data/hymenoptera_data/' .. split .. '/' .. cls .. '/' .. name .. '.jpg')
      end
    end
  end")

# ---- transfer learning ----
out=$(cd "$tmp/tl" && TL_EPOCHS=2 TL_PRETRAINED=0 "$bin" "$tut/transfer_learning_tutorial.lua" 2>&1)
check "tl: exit 0" [ $? -eq 0 ]
check "tl: the first batch's classes" matches "$(head -1 <<<"$out")" "^\[('(ants|bees)'(, )?){4}\]$"
check "tl: 2 trainings of 2 epochs" test "$(count "$out" '^Epoch [01]/1$')" -eq 4
# 8 images a phase: accuracies are multiples of 1/8
check "tl: train lines" test "$(count "$out" '^train Loss: [0-9]\.[0-9]{4} Acc: (0\.[0-9]{3}0|1\.0000)$')" -eq 4
check "tl: val lines" test "$(count "$out" '^val Loss: [0-9]\.[0-9]{4} Acc: (0\.[0-9]{3}0|1\.0000)$')" -eq 4
check "tl: timing lines" test "$(count "$out" '^Training complete in [0-9]+m [0-9]+s$')" -eq 2
best=$(sed -nE 's/^Best val Acc: ([0-9.]+)$/\1/p' <<<"$out" | head -1)
vmax=$(sed -nE 's/^val Loss: .* Acc: ([0-9.]+)$/\1/p' <<<"$out" | head -2 | sort -n | tail -1)
check "tl: best val acc is the best epoch's ($best, $vmax)" close "$best" "$vmax" 1e-6
check "tl: 6 + 6 predictions" test "$(count "$out" '^predicted: (ants|bees)$')" -eq 12
check "tl: the custom image's prediction" matches "$(tail -1 <<<"$out")" '^Predicted: (ants|bees)$'
l0=$(grep -m1 '^train Loss' <<<"$out" | awk '{print $3}') l1=$(grep '^train Loss' <<<"$out" | sed -n 2p | awk '{print $3}')
check "tl: finetuning's train loss falls ($l0 -> $l1)" less "$l1" "$l0"
err=$(cd "$tmp/tl" && TORCH_HOME="$tmp/nohub" TL_EPOCHS=1 "$bin" "$tut/transfer_learning_tutorial.lua" 2>&1)
check "tl: no pretrained weights: exit 1" [ $? -eq 1 ]
check "tl: no pretrained weights: where they go" has "$err" "resnet18-f37072fd.pth is not in the cache"
err=$(cd "$tmp" && "$bin" "$tut/transfer_learning_tutorial.lua" 2>&1)
check "tl: no data: names the folder" has "$err" "data/hymenoptera_data/train"

# ---- finetuning torchvision models ----
out=$(cd "$tmp/tl" && FT_EPOCHS=2 FT_PRETRAINED=0 "$bin" "$tut/finetuning_torchvision_models_tutorial.lua" 2>&1)
check "ft: exit 0" [ $? -eq 0 ]
check "ft: squeezenet reshaped" has "$out" "    (1): Conv2d(512, 2, kernel_size=(1, 1), stride=(1, 1))
    (2): ReLU(inplace=True)
    (3): AdaptiveAvgPool2d(output_size=(1, 1))"
check "ft: feature extraction learns the new layer only" has "$out" "Params to learn:
	 classifier.1.weight
	 classifier.1.bias
Epoch 0/1"
check "ft: 2 trainings of 2 epochs" test "$(count "$out" '^(train|val) Loss: [0-9]\.[0-9]{4} Acc: (0\.[0-9]{3}0|1\.0000)$')" -eq 8
check "ft: the curves' 2 rows" test "$(count "$out" '^[12]	[01]\.[0-9]{4}	[01]\.[0-9]{4}$')" -eq 2
out=$(cd "$tmp/tl" && FT_MODEL=resnet FT_EPOCHS=1 FT_PRETRAINED=0 FT_FEATURE_EXTRACT=0 "$bin" "$tut/finetuning_torchvision_models_tutorial.lua" 2>&1)
check "ft resnet: exit 0" [ $? -eq 0 ]
check "ft resnet: fc reshaped" has "$out" "(fc): Linear(in_features=512, out_features=2, bias=True)"
check "ft resnet: finetuning learns all 62 tensors" test "$(count "$out" '^	 ')" -eq 62
err=$(cd "$tmp/tl" && FT_MODEL=vggnet "$bin" "$tut/finetuning_torchvision_models_tutorial.lua" 2>&1)
check "ft: invalid model: exit 1" [ $? -eq 1 ]
check "ft: invalid model: the tutorial's message" has "$err" "Invalid model name, exiting..."
err=$(cd "$tmp/tl" && TORCH_HOME="$tmp/nohub" "$bin" "$tut/finetuning_torchvision_models_tutorial.lua" 2>&1)
check "ft: no pretrained weights: names the file" has "$err" "squeezenet1_0-b66bff10.pth is not in the cache"

finish
