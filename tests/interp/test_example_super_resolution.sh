#!/usr/bin/env bash
# scripts/examples/super_resolution (pytorch/examples super_resolution) end to end on a tiny
# BSDS300 made here (4 training PNGs, 2 test JPEGs of smooth colour waves, in
# dataset/BSDS300/images/{train,test}): the flags and Namespace line, the printed lines' format
# and arithmetic (the epoch's average is the mean of its batches' losses), the loss falling
# and the PSNR rising, the checkpoints (they load back into Net), super_resolve.lua's output
# image (upscale_factor times the input's size), and the errors for a bad flag, a missing
# required flag and missing data.
# Usage: bash tests/interp/test_example_super_resolution.sh build/nnrepl
bin=${1:?usage: test_example_super_resolution.sh path/to/nnrepl}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
root=$(cd "$(dirname "$0")/../.." && pwd)
ex=$root/scripts/examples/super_resolution
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$root/tests/interp/lib.sh"

images=$tmp/w/dataset/BSDS300/images
mkdir -p "$images/train" "$images/test"
"$bin" -e "
  local Image = require('PIL').Image
  torch.manual_seed(5)
  local function mk(p, h, w)
    local yy = torch.arange(h):view(h, 1, 1):double()
    local xx = torch.arange(w):view(1, w, 1):double()
    local c = torch.tensor({0.7, 1.3, 2.1}):view(1, 1, 3)
    local t = torch.sin(yy * 0.2 * c + xx * 0.15) * 100 + 128 + torch.rand(h, w, 3) * 20
    Image.fromarray(t:clamp(0, 255):to(torch.uint8)):save(p)
  end
  for i = 1, 4 do mk('$images/train/im' .. i .. '.png', 40 + 4 * i, 48) end
  for i = 1, 2 do mk('$images/test/t' .. i .. '.jpg', 44, 40) end
  io.open('$images/train/notes.txt', 'w'):close()" || { echo "cannot make the dataset"; exit 1; }

run() { # flags: main.lua in $tmp/w
  (cd "$tmp/w" && "$bin" "$ex/main.lua" "$@" 2>"$tmp/err")
}

out=$(run --upscale_factor 3 --batchSize 2 --testBatchSize 2 --nEpochs 4 --lr 0.001)
rc=$?
check "exit 0" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || cat "$tmp/err"
check "Namespace line" has "$out" "Namespace(upscale_factor=3, batchSize=2, testBatchSize=2, nEpochs=4, lr=0.001, accel=False, threads=4, seed=123)"
check "loading and building lines" matches "$(head -3 <<<"$out" | tail -2 | tr '\n' '|')" '^===> Loading datasets\|===> Building model\|$'
check "2 batches an epoch (4 images, notes.txt skipped)" [ "$(count "$out" '^===> Epoch\[[1-4]\]\([12]/2\): Loss: [0-9]+\.[0-9]{4}$')" -eq 8 ]
check "epoch lines" [ "$(count "$out" '^===> Epoch [1-4] Complete: Avg. Loss: [0-9]+\.[0-9]{4}$')" -eq 4 ]
check "PSNR lines" [ "$(count "$out" '^===> Avg. PSNR: [0-9]+\.[0-9]{4} dB$')" -eq 4 ]
check "checkpoint lines" [ "$(count "$out" '^Checkpoint saved to model_epoch_[1-4]\.pth$')" -eq 4 ]
for e in 1 4; do
  mean=$(sed -nE "s/^===> Epoch\[$e\]\([0-9]+\/2\): Loss: ([0-9.]+)\$/\\1/p" <<<"$out" | awk '{ s += $1 } END { if (NR) printf "%.4f", s / NR }')
  avg=$(sed -nE "s/^===> Epoch $e Complete: Avg. Loss: ([0-9.]+)\$/\\1/p" <<<"$out")
  check "epoch $e average $avg = mean of its batches $mean" close "$avg" "$mean" 0.00011
  eval "avg$e=\$avg"
done
check "loss falls: epoch 4 $avg4 < 0.5 * epoch 1 $avg1" less "$avg4" "$(awk -v a="$avg1" 'BEGIN { print 0.5 * a }')"
psnr=$(sed -nE 's/^===> Avg. PSNR: ([0-9.]+) dB$/\1/p' <<<"$out" | tr '\n' ' ')
check "PSNR rises ($psnr)" less "$(cut -d' ' -f1 <<<"$psnr")" "$(cut -d' ' -f4 <<<"$psnr")"
# the PSNR of the mean MSE of a batch: 10 log10(1 / mse) > 10 since the images lie in [0, 1]
check "PSNR above 10 dB" less 10 "$(cut -d' ' -f1 <<<"$psnr")"
loaded=$(cd "$tmp/w" && "$bin" -e "
  package.path = '$ex/?.lua;' .. package.path
  local Net = require('model').Net
  local net = torch.load('model_epoch_4.pth', {weights_only = false})
  print(net.__class == Net, net.conv4.weight.shape, net(torch.zeros(1, 1, 5, 7)).shape)" 2>&1)
check "the whole model saved loads back as a Net ($loaded)" test "$loaded" = "true	torch.Size([9, 32, 3, 3])	torch.Size([1, 1, 15, 21])"
again=$(run --upscale_factor 3 --batchSize 2 --testBatchSize 2 --nEpochs 4 --lr 0.001)
check "the same seed, the same run" test "$again" = "$out"

sr=$(cd "$tmp/w" && "$bin" "$ex/super_resolve.lua" --input_image dataset/BSDS300/images/test/t1.jpg \
  --model model_epoch_4.pth --output_filename out.png 2>"$tmp/err")
rc=$?
check "super_resolve: exit 0" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || cat "$tmp/err"
check "super_resolve: Namespace line" has "$sr" "Namespace(input_image='dataset/BSDS300/images/test/t1.jpg', model='model_epoch_4.pth', output_filename='out.png', accel=False)"
check "super_resolve: saved line" has "$sr" "output image saved to  out.png"
shape=$("$bin" -e "print(require('torchvision').io.read_image('$tmp/w/out.png').shape)" 2>&1)
check "super_resolve: 3 x (44, 40) RGB ($shape)" test "$shape" = "torch.Size([3, 132, 120])"

if [ "$("$bin" -e 'print(torch.cuda.is_available())' 2>/dev/null)" = true ]; then
  gpu=$(run --upscale_factor 2 --batchSize 2 --testBatchSize 2 --nEpochs 1 --accel)
  check "cuda: exit 0" [ $? -eq 0 ]
  check "cuda: PSNR line" matches "$gpu" '^===> Avg. PSNR: [0-9]+\.[0-9]{4} dB$'
  (cd "$tmp/w" && "$bin" "$ex/super_resolve.lua" --input_image dataset/BSDS300/images/test/t1.jpg \
    --model model_epoch_1.pth --output_filename gpu.png --accel >/dev/null)
  check "cuda: super_resolve" test -s "$tmp/w/gpu.png"
else
  echo "skipped: the CUDA run (no GPU)"
fi

run --upscale_factor 3 --bogus >/dev/null
check "bad flag: exit 2" [ $? -eq 2 ]
check "bad flag: message" grep -qF "unrecognized arguments: --bogus" "$tmp/err"
run >/dev/null
check "no --upscale_factor: exit 2" [ $? -eq 2 ]
check "no --upscale_factor: message" grep -qF "the following arguments are required: --upscale_factor" "$tmp/err"
mkdir -p "$tmp/empty"
(cd "$tmp/empty" && "$bin" "$ex/main.lua" --upscale_factor 3 >/dev/null 2>"$tmp/err")
check "missing data: exit non-zero" [ $? -ne 0 ]
check "missing data: message" grep -qF "dataset/BSDS300/images is missing and nnrepl downloads nothing: extract BSDS300-images.tgz" "$tmp/err"

finish
