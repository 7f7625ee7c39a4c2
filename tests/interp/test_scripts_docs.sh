#!/usr/bin/env bash
# The ports of documents 000, 002 and 003 (scripts/doc000_*.lua, doc002_devices.lua,
# doc003_*.lua) with tiny settings: each exits 0 and prints the document's lines;
# doc000_make_dataset writes path,label CSV files of PNG images (Fashion-MNIST's labels and
# pixels when the files are there) that doc000_cnn trains on, its first loss is ln(101) (the
# document's init makes the logits about 0) and its saved state_dict reads back with the
# Net's keys and shapes (read by torch.load and, with python3, from the safetensors header);
# doc003's DataParallel splits match the document's (30 over 8 GPUs: 4 x 7 and 2); the
# CIFAR-10 CNN runs on fake data and on CIFAR-10 binary files written here.
# Usage: bash tests/interp/test_scripts_docs.sh build/nnrepl
bin=${1:?usage: test_scripts_docs.sh path/to/nnrepl}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0 skipped=0

check() { # name, then a command that succeeds when the check passes
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $name"; fi
}
skip() { skipped=$((skipped + 1)); echo "SKIP: $1"; }
has() { grep -qF -- "$2" <<<"$1"; }
matches() { grep -qE -- "$2" <<<"$1"; }
lacks() { ! grep -qF -- "$2" <<<"$1"; }
count() { grep -cE -- "$2" <<<"$1"; }
close() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && b != "" && d <= t) }'; }
run() { (cd "$tmp" && "$bin" "$@" 2>"$tmp/stderr"); }
cuda=$("$bin" -e 'io.write(tostring(torch.cuda.is_available()))')
ngpu=$("$bin" -e 'io.write(torch.cuda.device_count())')
py=$(command -v python3)

# ---- doc000_make_dataset ----

out=$(run "$root/scripts/doc000_make_dataset.lua" --synthetic --out "$tmp/syn" --train 101 --valid 10 --test 5 --seed 3)
rc=$?
check "make_dataset --synthetic: exit 0 ($(cat "$tmp/stderr"))" [ "$rc" -eq 0 ]
check "make_dataset: one line per split" matches "$out" "^valid: 10 images, $tmp/syn/desc_valid.csv$"
csv=$tmp/syn/desc_train.csv
check "make_dataset: header" [ "$(head -n 1 "$csv")" = "path,label" ]
check "make_dataset: rows" [ "$(wc -l <"$csv")" -eq 102 ]
check "make_dataset: test rows" [ "$(wc -l <"$tmp/syn/desc_test.csv")" -eq 6 ]
check "make_dataset: rows are absolute png paths and labels 0..9" \
  [ "$(tail -n +2 "$csv" | grep -cE '^/.+\.png,[0-9]$')" -eq 101 ]
missing=0
while IFS=, read -r path _; do [ -s "$path" ] || missing=$((missing + 1)); done < <(tail -n +2 "$csv")
check "make_dataset: every image exists ($missing missing)" [ "$missing" -eq 0 ]
first=$(sed -n 2p "$csv" | cut -d, -f1)
img=$("$bin" -e "local I = require('PIL').Image.open('$first'); io.write(I.mode, ' ', I.width, 'x', I.height)")
check "make_dataset: synthetic images are 40x30 RGB ($img)" [ "$img" = "RGB 40x30" ]

fm=/usr/share/datasets/fashion-mnist
if [ -s "$fm/train-labels-idx1-ubyte.gz" ] && [ -n "$py" ]; then
  out=$(run "$root/scripts/doc000_make_dataset.lua" --out "$tmp/fm" --train 6 --valid 3 --test 2)
  check "make_dataset (Fashion-MNIST): exit 0" [ $? -eq 0 ]
  got=$(tail -n +2 "$tmp/fm/desc_train.csv" | cut -d, -f2 | tr '\n' ' ')
  got="$got$(tail -n +2 "$tmp/fm/desc_valid.csv" | cut -d, -f2 | tr '\n' ' ')"
  want=$("$py" -c "import gzip,sys; b=gzip.open('$fm/train-labels-idx1-ubyte.gz').read()[8:17]; print(' '.join(map(str,b)), end=' ')")
  check "make_dataset: Fashion-MNIST's first labels ($got vs $want)" [ "$got" = "$want" ]
  path=$(sed -n 3p "$tmp/fm/desc_train.csv" | cut -d, -f1)
  got=$("$bin" -e "local t = require('torchvision').io.read_image('$path'); io.write(tostring(t.shape), ' ', t:sum():item())")
  want=$("$py" -c "import gzip; b=gzip.open('$fm/train-images-idx3-ubyte.gz').read(); print('torch.Size([1, 28, 28])', sum(b[16+784:16+2*784]), end='')")
  check "make_dataset: image 1's pixels ($got vs $want)" [ "$got" = "$want" ]
else
  skip "Fashion-MNIST or python3 absent: make_dataset's Fashion-MNIST checks"
fi

run "$root/scripts/doc000_make_dataset.lua" --out "$tmp/none" --root "$tmp/no-such-dir" >/dev/null
rc=$?
check "make_dataset without the files: exit 1" [ "$rc" -eq 1 ]
check "make_dataset without the files: names --synthetic" grep -qF -- "--synthetic" "$tmp/stderr"

# ---- doc000_cnn ----

out=$(run "$root/scripts/doc000_cnn.lua" --data-dir "$tmp/syn" --epochs 2 --batch-size 1 --save "$tmp/net_params.pkl" --seed 0)
rc=$?
check "doc000_cnn: exit 0 ($(cat "$tmp/stderr"))" [ "$rc" -eq 0 ]
check "doc000_cnn: version line" matches "$(head -n 1 <<<"$out")" '^[0-9]+\.[0-9]+\.[0-9]+'
check "doc000_cnn: gpu can be used" matches "$out" '^gpu can be used (True|False)$'
check "doc000_cnn: gpu device" matches "$out" '^gpu device [0-9]+$'
check "doc000_cnn: start time" matches "$out" '^start time [0-9]+\.[0-9]+$'
check "doc000_cnn: step lines every 100 steps" [ "$(count "$out" '^epoch [01] step (0|100) loss [0-9.e-]+$')" -eq 4 ]
check "doc000_cnn: no other step lines" [ "$(count "$out" ' step ')" -eq 4 ]
check "doc000_cnn: finish training" matches "$out" '^finish training$'
check "doc000_cnn: end time" matches "$out" '^end time [0-9]+\.[0-9]+$'
check "doc000_cnn: spend time" matches "$out" '^spend time [0-9]+\.[0-9]+(e-[0-9]+)?$'
check "doc000_cnn: line order" [ "$(grep -oE '^(start time|epoch 0 step 0|epoch 0 step 100|epoch 1 step 0|finish training|end time|spend time)' <<<"$out" | tr '\n' '|')" = \
  "start time|epoch 0 step 0|epoch 0 step 100|epoch 1 step 0|finish training|end time|spend time|" ]
loss0=$(sed -nE 's/^epoch 0 step 0 loss ([^ ]+)$/\1/p' <<<"$out")
check "doc000_cnn: first loss is about ln(101) = 4.6151 ($loss0)" close "$loss0" 4.6151 0.01
loss1=$(sed -nE 's/^epoch 1 step 100 loss ([^ ]+)$/\1/p' <<<"$out")
check "doc000_cnn: the loss moves ($loss0 -> $loss1)" awk -v a="$loss0" -v b="$loss1" 'BEGIN { exit !(b != "" && a != b) }'
keys=$("$bin" -e "local sd = torch.load('$tmp/net_params.pkl'); for k, v in pairs(sd) do print(k, tostring(v.shape), tostring(v.dtype)) end" 2>&1)
want="conv1.weight	torch.Size([32, 3, 3, 3])	torch.float32
conv1.bias	torch.Size([32])	torch.float32
conv2.weight	torch.Size([64, 32, 3, 3])	torch.float32
conv2.bias	torch.Size([64])	torch.float32
fc1.weight	torch.Size([256, 2304])	torch.float32
fc1.bias	torch.Size([256])	torch.float32
fc2.weight	torch.Size([128, 256])	torch.float32
fc2.bias	torch.Size([128])	torch.float32
fc3.weight	torch.Size([101, 128])	torch.float32
fc3.bias	torch.Size([101])	torch.float32"
check "doc000_cnn: state_dict keys and shapes by torch.load" [ "$keys" = "$want" ]
if [ -n "$py" ]; then
  header=$("$py" -c "
import json, struct
f = open('$tmp/net_params.pkl', 'rb'); n = struct.unpack('<Q', f.read(8))[0]; h = json.loads(f.read(n))
print(' '.join(sorted(k + ':' + v['dtype'] + ':' + 'x'.join(map(str, v['shape'])) for k, v in h.items() if k != '__metadata__')))")
  check "doc000_cnn: safetensors header ($header)" [ "$header" = "conv1.bias:F32:32 conv1.weight:F32:32x3x3x3 conv2.bias:F32:64 conv2.weight:F32:64x32x3x3 fc1.bias:F32:256 fc1.weight:F32:256x2304 fc2.bias:F32:128 fc2.weight:F32:128x256 fc3.bias:F32:101 fc3.weight:F32:101x128" ]
else
  skip "python3 absent: the safetensors header check"
fi
# 12 epochs of 2 steps at lr 1e-6: the weights stay near their init (Linear: normal(0, 0.01),
# zero biases; Conv2d: xavier_normal_), and the validation loss stays flat, so
# ReduceLROnPlateau (patience 10, verbose) cuts the lr after epoch 12 as PyTorch's did
out=$(run "$root/scripts/doc000_cnn.lua" --data-dir "$tmp/syn" --epochs 12 --batch-size 64 --lr 1e-6 --save "$tmp/init.pkl" --seed 0)
check "doc000_cnn: 12 epochs, exit 0" [ $? -eq 0 ]
check "doc000_cnn: ReduceLROnPlateau's verbose line" [ "$(grep -c 'reducing' <<<"$out")" -eq 1 ]
check "doc000_cnn: ... after epoch 12" has "$out" "Epoch 00012: reducing learning rate of group 0 to 1.0000e-07."
stats=$("$bin" -e "local sd = torch.load('$tmp/init.pkl'); local w = sd['fc1.weight']
  local c = sd['conv1.weight']; io.write(string.format('%.4f %.5f %.4f %.4f', w:std():item(), sd['fc1.bias']:abs():max():item(),
  c:std():item(), math.sqrt(2 / (27 + 288))))")
read -r fc_std fc_bias conv_std xavier <<<"$stats"
check "doc000_cnn: normal_(0, 0.01) for Linear ($fc_std)" close "$fc_std" 0.01 0.0005
check "doc000_cnn: zero Linear biases ($fc_bias)" close "$fc_bias" 0 0.0001
check "doc000_cnn: xavier_normal_ for Conv2d ($conv_std vs $xavier)" close "$conv_std" "$xavier" 0.02
# on a terminal: a progress bar on stderr; the document's lines still go to stdout, here a file
if command -v script >/dev/null; then
  script -qec "cd '$tmp' && '$bin' '$root/scripts/doc000_cnn.lua' --data-dir '$tmp/syn' --epochs 1 --batch-size 1 \
    --save '$tmp/tty.pkl' >'$tmp/tty_out.txt'" "$tmp/typescript" >/dev/null 2>&1
  check "doc000_cnn on a terminal: exit 0" [ $? -eq 0 ]
  check "doc000_cnn on a terminal: the bar" grep -qE 'epoch 0 train: +[0-9]+%\|' "$tmp/typescript"
  check "doc000_cnn on a terminal: step lines to the redirected stdout" \
    [ "$(grep -cxE 'epoch 0 step (0|100) loss [0-9.e-]+' "$tmp/tty_out.txt")" -eq 2 ]
  check "doc000_cnn on a terminal: no bar in stdout" [ "$(grep -c 'train:' "$tmp/tty_out.txt")" -eq 0 ]
else
  skip "no script(1): the terminal checks"
fi
out=$(run "$root/scripts/doc000_cnn.lua" --data-dir "$tmp/nowhere" --epochs 1)
rc=$?
check "doc000_cnn without data: exit 1" [ "$rc" -eq 1 ]
check "doc000_cnn without data: names doc000_make_dataset" grep -qF "doc000_make_dataset.lua" "$tmp/stderr"

# ---- doc002_devices ----

out=$(run "$root/scripts/doc002_devices.lua")
rc=$?
check "doc002: exit 0 ($(cat "$tmp/stderr"))" [ "$rc" -eq 0 ]
if [ "$cuda" = false ]; then
  want="cpu
False
cpu
cuda:0
cuda
cuda:0
cuda cuda
no GPU: the examples of 1.2 (tensors created on or copied to cuda:0) are skipped
data cpu loss cpu model cpu
torch.Size([4, 2]) cpu torch.Size([4]) cpu
torch.Size([4, 2]) cpu torch.Size([4]) cpu
torch.Size([2, 2]) cpu torch.Size([2]) cpu"
  check "doc002: the CPU output" [ "$out" = "$want" ]
  [ "$out" = "$want" ] || diff <(echo "$want") <(echo "$out")
else
  check "doc002: GPU lines" has "$out" "cuda:0 cuda:0 cuda:0 cuda:0"
  check "doc002: copies back" has "$out" "cuda:0 cpu cpu cpu"
  check "doc002: batches on the GPU" has "$out" "torch.Size([2, 2]) cuda:0 torch.Size([2]) cuda:0"
fi

# ---- doc003_dataparallel ----

out=$(run "$root/scripts/doc003_dataparallel.lua" --seed 0)
rc=$?
check "doc003_dataparallel: exit 0 ($(cat "$tmp/stderr"))" [ "$rc" -eq 0 ]
if [ "$ngpu" -le 1 ]; then
  inner() { printf '\tIn Model: input size torch.Size([%d, 5])\toutput size torch.Size([%d, 2])\n' "$1" "$1"; }
  outer() { printf 'Outside: input size torch.Size([%d, 5]) output_size torch.Size([%d, 2])\n' "$1" "$1"; }
  want=$(inner 30; outer 30; inner 30; outer 30; inner 30; outer 30; inner 10; outer 10)
  check "doc003_dataparallel: the lines (one device)" [ "$out" = "$want" ]
else
  check "doc003_dataparallel: Let's use" has "$out" "Let's use $ngpu GPUs!"
  check "doc003_dataparallel: four batches" [ "$(count "$out" '^Outside: ')" -eq 4 ]
fi
splits=$("$bin" -e 'local p = require "nn_parallel"; io.write(table.concat(p.chunk_sizes(30, 8), ","), " ", table.concat(p.chunk_sizes(10, 8), ","))')
check "DataParallel's splits over 8 GPUs are the document's ($splits)" [ "$splits" = "4,4,4,4,4,4,4,2 2,2,2,2,2" ]

# ---- doc003_cifar_dp ----

line_re='^Test set: Average loss: [0-9]+\.[0-9]{4}, Accuracy: [0-9]+/16 \([0-9]+%\)$'
out=$(run "$root/scripts/doc003_cifar_dp.lua" --fake-data --fake-size 64 --epochs 2 --batch-size 16 --seed 1)
rc=$?
check "doc003_cifar_dp --fake-data: exit 0 ($(cat "$tmp/stderr"))" [ "$rc" -eq 0 ]
check "doc003_cifar_dp: one test line per epoch" [ "$(count "$out" "$line_re")" -eq 2 ]
check "doc003_cifar_dp: nothing else" [ "$(wc -l <<<"$out")" -eq 2 ]
check "doc003_cifar_dp: the percentage is correct/total" awk '{
  split($NF, p, /[()%]/); split($(NF-1), c, "/"); if (sprintf("%.0f", 100 * c[1] / c[2]) != p[2]) bad = 1 } END { exit bad }' <<<"$out"
loss=$(sed -nE '1s/.*Average loss: ([0-9.]+),.*/\1/p' <<<"$out")
check "doc003_cifar_dp: average loss near ln(10)/16 = 0.1439 ($loss)" close "$loss" 0.1439 0.03
out0=$(run "$root/scripts/doc003_cifar_dp.lua" --fake-data --fake-size 64 --epochs 1 --batch-size 16 --seed 2 --num-workers 0)
out2=$(run "$root/scripts/doc003_cifar_dp.lua" --fake-data --fake-size 64 --epochs 1 --batch-size 16 --seed 2 --num-workers 2)
check "doc003_cifar_dp: same result with and without workers ($out0 | $out2)" [ -n "$out0" -a "$out0" = "$out2" ]

# CIFAR-10 binary files: 1 label byte and 3072 pixel bytes per record
mkdir -p "$tmp/cifar/cifar-10-batches-bin"
"$bin" -e "
torch.manual_seed(5)
for _, name in ipairs({'data_batch_1', 'data_batch_2', 'data_batch_3', 'data_batch_4', 'data_batch_5', 'test_batch'}) do
  local f = assert(io.open('$tmp/cifar/cifar-10-batches-bin/' .. name .. '.bin', 'wb'))
  for _ = 1, 20 do
    local px = torch.randint(0, 256, {3072}):tolist()
    f:write(string.char(torch.randint(0, 10, {1}):item()), string.char(table.unpack(px)))
  end
  f:close()
end"
out=$(run "$root/scripts/doc003_cifar_dp.lua" --data-root "$tmp/cifar" --limit 16 --epochs 1 --batch-size 8)
rc=$?
check "doc003_cifar_dp on CIFAR-10 files: exit 0 ($(cat "$tmp/stderr"))" [ "$rc" -eq 0 ]
check "doc003_cifar_dp on CIFAR-10 files: the test line" matches "$out" "$line_re"
run "$root/scripts/doc003_cifar_dp.lua" --data-root "$tmp/no-cifar" --epochs 1 >/dev/null
rc=$?
check "doc003_cifar_dp without CIFAR-10: exit 1" [ "$rc" -eq 1 ]
check "doc003_cifar_dp without CIFAR-10: the message" grep -qE "^CIFAR10: data_batch_1.bin not found" "$tmp/stderr"
check "doc003_cifar_dp without CIFAR-10: names --fake-data" grep -qF -- "--fake-data" "$tmp/stderr"

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
