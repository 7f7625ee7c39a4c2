#!/usr/bin/env bash
# scripts/examples/fast_neural_style (pytorch/examples fast_neural_style) end to end on tiny
# images made here (an ImageFolder of 4 PNGs of colour waves and a style PNG), against a random
# VGG16 (NNREPL_FNS_RANDOM_VGG=1: no pretrained weights needed): train's log lines (format,
# total = content + style, the loss falling), the checkpoints and the final .model (names, they
# load into TransformerNet), eval's image (the model's output, clamped and truncated), eval of
# a checkpoint holding old InstanceNorm running_* entries, --export_onnx (the same image, a file
# written), and the errors: no sub-command, a bad flag, a missing required flag, missing
# pretrained weights, an .onnx model, --accel without a GPU, a folder it cannot create.
# Usage: bash tests/interp/test_example_fast_neural_style.sh build/nnrepl
bin=${1:?usage: test_example_fast_neural_style.sh path/to/nnrepl}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
root=$(cd "$(dirname "$0")/../.." && pwd)
ex=$root/scripts/examples/fast_neural_style
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$root/tests/interp/lib.sh"

mkdir -p "$tmp/w/data/imgs"
"$bin" -e "
  local Image = require('PIL').Image
  torch.manual_seed(5)
  local function mk(p, h, w, f)
    local yy = torch.arange(h):view(h, 1, 1):double()
    local xx = torch.arange(w):view(1, w, 1):double()
    local c = torch.tensor({0.7, 1.3, 2.1}):view(1, 1, 3)
    local t = torch.sin(yy * f * c + xx * 0.15) * 100 + 128 + torch.rand(h, w, 3) * 20
    Image.fromarray(t:clamp(0, 255):to(torch.uint8)):save(p)
  end
  for i = 1, 4 do mk('$tmp/w/data/imgs/im' .. i .. '.png', 40 + 4 * i, 36, 0.2) end
  mk('$tmp/w/style.png', 30, 40, 0.9)" || { echo "cannot make the images"; exit 1; }

run() { # neural_style.lua in $tmp/w, random VGG weights
  (cd "$tmp/w" && NNREPL_FNS_RANDOM_VGG=1 "$bin" "$ex/neural_style.lua" "$@" 2>"$tmp/err")
}

out=$(run train --dataset data --style-image style.png --save-model-dir saved --checkpoint-model-dir ck \
  --image-size 32 --batch-size 2 --epochs 4 --log-interval 1 --checkpoint-interval 2 --lr 0.01)
rc=$?
check "train: exit 0" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || cat "$tmp/err"
check "train: device line" has "$out" "Using device: cpu"
num='[0-9]+\.[0-9]{6}'
line_re="^[A-Z][a-z]{2} [A-Z][a-z]{2} [ 1-3][0-9] [0-9]{2}:[0-9]{2}:[0-9]{2} [0-9]{4}	Epoch [1-4]:	\[[24]/4\]	content: $num	style: $num	total: $num\$"
check "train: 8 log lines (4 epochs of 2 batches)" [ "$(count "$out" "$line_re")" -eq 8 ]
check "train: total = content + style" awk_true "$(awk -F'\t' '/Epoch/ { split($4, c, " "); split($5, s, " "); split($6, t, " ");
  d = c[2] + s[2] - t[2]; if (d < 0) d = -d; if (d > 2e-6 * t[2] + 2e-6) bad = 1 } END { print bad ? 0 : 1 }' <<<"$out")"
tot() { grep -E "Epoch $1:.\[4/4\]" <<<"$out" | sed -E 's/.*total: ([0-9.]+)$/\1/'; }
t1=$(tot 1) t4=$(tot 4)
check "train: loss falls, epoch 4 $t4 < 0.5 * epoch 1 $t1" less "$t4" "$(awk -v a="$t1" 'BEGIN { print 0.5 * a }')"
check "train: the Done line after a blank one" matches "$(tail -2 <<<"$out" | tr '\n' '|')" \
  '^\|Done, trained model saved at saved/epoch_4_[0-9]{4}-[0-9]{2}-[0-9]{2}_[0-9]{2}-[0-9]{2}-[0-9]{2}_100000\.0_10000000000\.0\.model\|$'
model=$(ls "$tmp/w/saved"/*.model 2>/dev/null | head -1)
check "train: the .model file" test -s "$model"
check "train: 4 checkpoints" test "$(cd "$tmp/w/ck" && ls | tr '\n' ' ')" = \
  "ckpt_epoch_0_batch_id_2.pth ckpt_epoch_1_batch_id_2.pth ckpt_epoch_2_batch_id_2.pth ckpt_epoch_3_batch_id_2.pth "
loaded=$("$bin" -e "
  package.path = '$ex/?.lua;' .. package.path
  local net = require('transformer_net').TransformerNet()
  local sd = torch.load('$model')
  net:load_state_dict(sd)
  local last = torch.load('$tmp/w/ck/ckpt_epoch_3_batch_id_2.pth')
  print(#sd, torch.equal(sd['res5.in2.weight'], last['res5.in2.weight']))
  -- an old checkpoint: InstanceNorm's running_* entries, which eval drops
  sd['in1.running_mean'] = torch.zeros(32)
  sd['res2.in1.running_var'] = torch.ones(128)
  torch.save(sd, '$tmp/w/old.pth')" 2>&1)
check "the model loads into TransformerNet, the last checkpoint is it ($loaded)" test "$loaded" = "62	true"

ev=$(run eval --content-image data/imgs/im1.png --model "$model" --output-image out.png)
rc=$?
check "eval: exit 0" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || cat "$tmp/err"
check "eval: device line" has "$ev" "Using device: cpu"
same=$("$bin" -e "
  package.path = '$ex/?.lua;' .. package.path
  local io_ = require('torchvision').io
  local net = require('transformer_net').TransformerNet()
  net:load_state_dict(torch.load('$model'))
  local x = io_.read_image('$tmp/w/data/imgs/im1.png'):float():unsqueeze(0)
  local want = torch.no_grad(function() return net:eval()(x) end)[0]:clamp(0, 255):floor()
  local got = io_.read_image('$tmp/w/out.png'):float()
  print(got.shape, (got - want):abs():max():item() <= 1, want:std():item() > 1)" 2>&1)
check "eval: out.png is the model's output ($same)" test "$same" = "torch.Size([3, 44, 36])	true	true"
run eval --content-image data/imgs/im1.png --model old.pth --output-image old.png --content-scale 2 >/dev/null
check "eval: an old checkpoint with running_* entries" [ $? -eq 0 ]
shape=$("$bin" -e "print(require('torchvision').io.read_image('$tmp/w/old.png').shape)" 2>&1)
# 44 x 36 halved is 22 x 18; the two stride-2 convolutions make that 6 x 5, upsampled 4 times
check "eval: --content-scale 2 halves the image, the network rounds it up ($shape)" test "$shape" = "torch.Size([3, 24, 20])"
run eval --content-image data/imgs/im1.png --model "$model" --output-image onnx.png --export_onnx m.onnx >/dev/null
check "eval --export_onnx: exit 0" [ $? -eq 0 ]
check "eval --export_onnx: the .onnx file" test -s "$tmp/w/m.onnx"
check "eval --export_onnx: the same image" cmp -s "$tmp/w/out.png" "$tmp/w/onnx.png"
run eval --content-image data/imgs/im1.png --model "$model" --output-image x.png --export_onnx m.bin >/dev/null
check "eval --export_onnx m.bin: refused" grep -qF "Export model file should end with .onnx" "$tmp/err"
run eval --content-image data/imgs/im1.png --model m.onnx --output-image x.png >/dev/null
check "eval --model m.onnx: exit non-zero" [ $? -ne 0 ]
check "eval --model m.onnx: message" grep -qF "m.onnx is an ONNX model, which needs onnxruntime to run; nnrepl runs no ONNX models" "$tmp/err"

if [ "$("$bin" -e 'print(torch.cuda.is_available())' 2>/dev/null)" = true ]; then
  gpu=$(run train --dataset data --style-image style.png --save-model-dir gsaved --image-size 32 --batch-size 2 \
    --epochs 1 --log-interval 1 --accel)
  check "cuda: train exit 0" [ $? -eq 0 ]
  check "cuda: device line" has "$gpu" "Using device: cuda"
  run eval --content-image data/imgs/im1.png --model "$model" --output-image gpu.png --accel >/dev/null
  check "cuda: eval" test -s "$tmp/w/gpu.png"
else
  echo "skipped: the CUDA run (no GPU)"
  msg=$(run train --dataset data --save-model-dir s --accel)
  check "--accel without a GPU: exit 1" [ $? -eq 1 ]
  check "--accel without a GPU: message" has "$msg" "ERROR: accelerator is not available, try running on CPU"
fi

msg=$(run)
check "no sub-command: exit 1" [ $? -eq 1 ]
check "no sub-command: message" has "$msg" "ERROR: specify either train or eval"
run train --dataset data --save-model-dir s --bogus >/dev/null
check "bad flag: exit 2" [ $? -eq 2 ]
check "bad flag: message" grep -qF "neural_style.lua: error: unrecognized arguments: --bogus" "$tmp/err"
msg=$(run train --dataset data --save-model-dir /proc/no/such)
check "unwritable --save-model-dir: exit 1" [ $? -eq 1 ]
check "unwritable --save-model-dir: message" has "$msg" "cannot create the folder '/proc/no/such'"
run train --save-model-dir s >/dev/null
check "no --dataset: exit 2" [ $? -eq 2 ]
check "no --dataset: message" grep -qF "neural_style.lua train: error: the following arguments are required: --dataset" "$tmp/err"
(cd "$tmp/w" && TORCH_HOME="$tmp/th" "$bin" "$ex/neural_style.lua" train --dataset data --style-image style.png \
  --save-model-dir s2 >/dev/null 2>"$tmp/err")
check "no pretrained VGG16: exit non-zero" [ $? -ne 0 ]
check "no pretrained VGG16: message" grep -qF "vgg16-397923af.pth is not in the cache, and nnrepl downloads nothing at run time: fetch https://download.pytorch.org/models/vgg16-397923af.pth on a machine with network and put it at $tmp/th/hub/checkpoints/vgg16-397923af.pth" "$tmp/err"

finish
