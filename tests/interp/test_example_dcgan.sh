#!/usr/bin/env bash
# The dcgan port (scripts/examples/dcgan/main.lua) end to end at tiny sizes (nz 16, ngf = ndf = 8,
# batch 4 or 8): --dataset fake --dry-run prints the original's lines and writes its two sample
# grids and two checkpoints, which load back with PyTorch's keys; on a folder of generated
# images (ImageFolder, Resize, CenterCrop) the discriminator learns in 4 epochs (Loss_D falls,
# D(x) rises); the same --manualSeed gives the same lines; --netG/--netD resume from the
# checkpoints; mnist (Debian's Fashion-MNIST IDX files, 1 channel) and cifar10 (tiny binary
# batches made here) run; missing flags and data give clear errors.
# Usage: bash tests/interp/test_example_dcgan.sh build/nnrepl
bin=${1:?usage: test_example_dcgan.sh path/to/nnrepl}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
root=$(cd "$(dirname "$0")/../.." && pwd)
main=$root/scripts/examples/dcgan/main.lua
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$root/tests/interp/lib.sh"

small=(--nz 16 --ngf 8 --ndf 8)
num='[0-9]+\.[0-9]{4}'
line_re="^\[[0-9]+/[0-9]+\]\[[0-9]+/[0-9]+\] Loss_D: $num Loss_G: $num D\(x\): $num D\(G\(z\)\): $num / $num$"

# ---- fake data, dry run ----
out=$(cd "$tmp" && "$bin" "$main" --dataset fake --dry-run --outf "$tmp/fake" --batchSize 8 "${small[@]}" 2>"$tmp/err")
rc=$?
check "fake dry run: exit 0" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || cat "$tmp/err"
check "Namespace line" has "$out" "Namespace(dataset='fake', dataroot=None, workers=2, batchSize=8, imageSize=64, nz=16, ngf=8, ndf=8, niter=25, lr=0.0002, beta1=0.5, dry_run=True, ngpu=1, netG='', netD='', outf='$tmp/fake', manualSeed=None, classes='bedroom', accel=False)"
seed=$(sed -nE 's/^Random Seed:  ([0-9]+)$/\1/p' <<<"$out")
check "random seed printed, in 1..10000 ($seed)" test -n "$seed" -a "${seed:-0}" -ge 1 -a "${seed:-0}" -le 10000
check "device line" has "$out" "Using device: cpu"
check "Generator printed" has "$out" "    (0): ConvTranspose2d(16, 64, kernel_size=(4, 4), stride=(1, 1), bias=False)"
check "Discriminator printed" has "$out" "    (11): Conv2d(64, 1, kernel_size=(4, 4), stride=(1, 1), bias=False)"
lines=$(grep -E '^\[' <<<"$out")
check "one training line in a dry run" test "$(wc -l <<<"$lines")" -eq 1
check "training line format ($lines)" matches "$lines" "$line_re"
check "training line counts (125 batches of 8 in FakeData's 1000)" matches "$lines" '^\[0/1\]\[0/125\] '
for f in real_samples.png fake_samples_epoch_000.png netG_epoch_0.pth netD_epoch_0.pth; do
  check "file $f written" test -s "$tmp/fake/$f"
done
shapes=$("$bin" -e "local tv = require 'torchvision'
  print(tv.io.read_image('$tmp/fake/real_samples.png').shape, tv.io.read_image('$tmp/fake/fake_samples_epoch_000.png').shape)" 2>&1)
check "sample grids are 8 images of 64x64 in a row ($shapes)" test "$shapes" = "torch.Size([3, 68, 530])	torch.Size([3, 68, 530])"
keys=$("$bin" -e "local g, d = torch.load('$tmp/fake/netG_epoch_0.pth'), torch.load('$tmp/fake/netD_epoch_0.pth')
  local n, m = 0, 0
  for _ in pairs(g) do n = n + 1 end
  for _ in pairs(d) do m = m + 1 end
  print(n, m, g['main.12.weight'].shape, d['main.0.weight'].shape, g['main.1.num_batches_tracked']:item(), d['main.3.num_batches_tracked']:item())" 2>&1)
# netG: 5 convolutions, 4 BatchNorms of 5 entries; netD: 5 and 3 of 5; G ran twice (the batch and
# fixed_noise, in training mode as in the original), D three times
check "checkpoints load back with PyTorch's keys ($keys)" \
  test "$keys" = "25	20	torch.Size([8, 3, 4, 4])	torch.Size([8, 3, 4, 4])	2	3"

# ---- a folder of images: D learns; the same seed gives the same run ----
"$bin" -e "local tv = require 'torchvision'
  os.execute('mkdir -p $tmp/img/a $tmp/img/b')
  local y, x = torch.arange(72):view(72, 1):float(), torch.arange(80):view(1, 80):float()
  for i = 0, 15 do -- a bright disc on a dark ground, 80 x 72: Resize and CenterCrop both act
    local img = (((y - 36) ^ 2 + (x - 40 - i) ^ 2):sqrt():lt(20):float() * 0.8 + 0.1):expand(3, 72, 80)
    tv.utils.save_image(img, string.format('$tmp/img/%s/%02d.png', i % 2 == 0 and 'a' or 'b', i))
  end"
run_folder() { (cd "$tmp" && "$bin" "$main" --dataset folder --dataroot "$tmp/img" --outf "$tmp/$1" --batchSize 4 \
  --niter 4 --manualSeed 3 --workers "$2" "${small[@]}" 2>&1); }
out=$(run_folder folder 0)
lines=$(grep -E '^\[' <<<"$out")
check "folder: 16 training lines" test "$(wc -l <<<"$lines")" -eq 16
check "folder: every line in format" test "$(grep -cE "$line_re" <<<"$lines")" -eq 16
check "folder: last line ([3/4][3/4])" matches "$(tail -1 <<<"$lines")" '^\[3/4\]\[3/4\] '
avg() { grep -E "^\[$1/" <<<"$lines" | sed -nE "s/.*$2: ([0-9.]+).*/\1/p" | awk '{ s += $1 } END { print s / NR }'; }
d0=$(avg 0 Loss_D) d3=$(avg 3 Loss_D) x0=$(avg 0 'D\(x\)') x3=$(avg 3 'D\(x\)')
check "folder: Loss_D falls ($d0 -> $d3)" awk -v a="$d0" -v b="$d3" 'BEGIN { exit !(b < 0.75 * a) }'
check "folder: D(x) rises ($x0 -> $x3)" awk -v a="$x0" -v b="$x3" 'BEGIN { exit !(b > a + 0.1) }'
check "folder: checkpoints of epochs 0..3" test -s "$tmp/folder/netG_epoch_3.pth" -a -s "$tmp/folder/netD_epoch_3.pth"
again=$(run_folder folder2 2 | grep -E '^\[')
check "folder: --manualSeed 3 again (2 workers) gives the same lines" test "$again" = "$lines"

# ---- resume from the checkpoints ----
resume() { (cd "$tmp" && "$bin" "$main" --dataset folder --dataroot "$tmp/img" --outf "$tmp/resume" --batchSize 4 \
  --dry-run --manualSeed 5 --workers 0 "${small[@]}" "$@" 2>&1); }
fresh=$(resume | grep -E '^\[')
resumed=$(resume --netG "$tmp/folder/netG_epoch_3.pth" --netD "$tmp/folder/netD_epoch_3.pth")
check "resume: runs ($(tail -1 <<<"$resumed"))" matches "$resumed" "$line_re"
rx=$(sed -nE 's/.*D\(x\): ([0-9.]+).*/\1/p' <<<"$resumed") fx=$(sed -nE 's/.*D\(x\): ([0-9.]+).*/\1/p' <<<"$fresh")
check "resume: the trained D is surer of real images ($fx fresh, $rx resumed)" awk -v a="$fx" -v b="$rx" 'BEGIN { exit !(b > a + 0.1) }'
bad=$(resume --netG "$tmp/folder/netD_epoch_3.pth")
check "resume: netD's file as --netG is refused" matches "$bad" 'Missing key|Unexpected key|missing|unexpected'

# ---- mnist (1 channel) and cifar10 ----
if [ -s /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
  out=$(cd "$tmp" && "$bin" "$main" --dataset mnist --dataroot /usr/share/datasets/fashion-mnist --outf "$tmp/mnist" \
    --batchSize 8 --dry-run "${small[@]}" 2>&1)
  check "mnist: one line over 7500 batches" matches "$out" '^\[0/1\]\[0/7500\] Loss_D'
  check "mnist: one-channel networks" has "$out" "    (0): Conv2d(1, 8, kernel_size=(4, 4), stride=(2, 2), padding=(1, 1), bias=False)"
else
  echo "skip: mnist (no /usr/share/datasets/fashion-mnist)"
fi
mkdir -p "$tmp/cifar/cifar-10-batches-bin"
"$bin" -e "for _, n in ipairs({'data_batch_1', 'data_batch_2', 'data_batch_3', 'data_batch_4', 'data_batch_5', 'test_batch'}) do
  local f = assert(io.open('$tmp/cifar/cifar-10-batches-bin/' .. n .. '.bin', 'wb'))
  for r = 0, 3 do f:write(string.char(r), string.rep(string.char(r * 60), 3072)) end
  f:close() end"
out=$(cd "$tmp" && "$bin" "$main" --dataset cifar10 --dataroot "$tmp/cifar" --outf "$tmp/cifar/out" --batchSize 8 \
  --niter 1 --manualSeed 1 "${small[@]}" 2>&1)
check "cifar10: 20 images in 3 batches of 8" test "$(grep -cE '^\[0/1\]\[[0-2]/3\] Loss_D' <<<"$out")" -eq 3

# ---- errors ----
err=$("$bin" "$main" 2>&1)
check "no --dataset: exit 2 ($?)" [ $? -eq 2 ]
check "no --dataset: argparse's message" has "$err" "main.lua: error: the following arguments are required: --dataset"
err=$(cd "$tmp" && "$bin" "$main" --dataset mnist 2>&1)
check "mnist without --dataroot: error" has "$err" '`dataroot` parameter is required for dataset "mnist"'
err=$(cd "$tmp" && "$bin" "$main" --dataset mnist --dataroot "$tmp/none" 2>&1)
check "mnist without files: says nothing is downloaded" has "$err" "nnrepl downloads nothing"
err=$(cd "$tmp" && "$bin" "$main" --dataset lsun --dataroot "$tmp/none" 2>&1)
check "lsun: refused with what to do" has "$err" "no LSUN (LMDB) reader"
err=$(cd "$tmp" && "$bin" "$main" --dataset fake --batchSize x 2>&1)
check "bad int flag" has "$err" "argument --batchSize: invalid int value: 'x'"

finish
