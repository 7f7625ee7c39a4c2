#!/usr/bin/env bash
# The imagenet port (scripts/examples/imagenet/main.lua) end to end on the CPU with resnet18 at
# 32x32: a probe loaded with -l (written here) shrinks --dummy's FakeData (16 train, 8 val
# images) and the crops (RandomResizedCrop and CenterCrop 32, Resize 36), the port unchanged.
# --dummy prints the original's lines and writes checkpoint.pth.tar and model_best.pth.tar that
# load back (epoch, arch, resnet18's keys, optimizer and scheduler state); on a tiny ImageFolder
# made here (bright and dark images) the training loss falls; --resume continues at the saved
# epoch; -e on model_best.pth.tar prints the best Acc@1 the checkpoint holds; 2 gloo ranks through
# the launcher (--multiprocessing-distributed, tcp:// and env://) split the data and all-reduce
# validation's accuracies; bad flags, missing data, --pretrained and --multiprocessing-distributed
# without the launcher give clear errors.
# Usage: bash tests/interp/test_example_imagenet.sh build/nnrepl
bin=${1:?usage: test_example_imagenet.sh path/to/nnrepl}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
export CUDA_VISIBLE_DEVICES= # the CPU run (on the GPUs: tests/gpu/examples/imagenet.* and a DDP smoke run)
root=$(cd "$(dirname "$0")/../.." && pwd)
main=$root/scripts/examples/imagenet/main.lua
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$root/tests/interp/lib.sh"

f3='[ 0-9][0-9]\.[0-9]{3}' f2='[ 0-9]{2}[0-9]\.[0-9]{2}' e4='[0-9]\.[0-9]{4}e[-+][0-9]{2}'
train_re="^Epoch: \[[0-9]+\]\[ *[0-9]+/[0-9]+\]	Time $f3 \($f3\)	Data $f3 \($f3\)	Loss $e4 \($e4\)	Acc@1 $f2 \($f2\)	Acc@5 $f2 \($f2\)$"
test_re="^Test: \[ *[0-9]+/[0-9]+\]	Time $f3 \($f3\)	Loss $e4 \($e4\)	Acc@1 $f2 \($f2\)	Acc@5 $f2 \($f2\)$"
summary_re='^ \*   Acc@1 [0-9]+\.[0-9]{3} Acc@5 [0-9]+\.[0-9]{3}$'

cat >"$tmp/small_images.lua" <<'EOF'
-- test probe: --dummy's FakeData made small (16 train images, $IMAGENET_TEST_VAL or 8 val images,
-- 3x32x32) and the crops 32 (Resize 36), so resnet18 trains in a fraction of a second a step
local tv = require "torchvision"
local D, T = tv.datasets, tv.transforms
local FakeData, RRC, Resize, CenterCrop = D.FakeData, T.RandomResizedCrop, T.Resize, T.CenterCrop
local val = tonumber(os.getenv("IMAGENET_TEST_VAL") or "8")
D.FakeData = function(size, _, ...) return FakeData(size > 1000000 and 16 or val, { 3, 32, 32 }, ...) end
T.RandomResizedCrop = function(_, ...) return RRC(32, ...) end
T.Resize = function(_, ...) return Resize(36, ...) end
T.CenterCrop = function(_, ...) return CenterCrop(32, ...) end
return {}
EOF
run() { (cd "$tmp/$1" && shift && "$bin" -l small_images "$main" "$@" 2>&1); }
export LUA_PATH="$tmp/?.lua;;"

# ---- --dummy: lines, counts, checkpoints ----
mkdir -p "$tmp/dummy"
out=$(run dummy --dummy --epochs 2 -b 4 -p 1 -j 0 --seed 1)
rc=$?
check "dummy: exit 0" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || echo "$out" | tail -5
check "dummy: device line" has "$out" "Using device: cpu"
check "dummy: model line" has "$out" "=> creating model 'resnet18'"
check "dummy: CPU line" has "$out" "using CPU, this will be slow"
check "dummy: dummy line" has "$out" "=> Dummy data is used!"
check "dummy: seed warning" has "$out" "UserWarning: You have chosen to seed training."
check "dummy: 8 training lines in format" test "$(count "$out" "$train_re")" -eq 8
check "dummy: batches [1/4]..[4/4] of epochs 0, 1" test "$(grep -oE '^Epoch: \[[0-9]\]\[[0-9]/4\]' <<<"$out" | tr '\n' ' ')" \
  = "Epoch: [0][1/4] Epoch: [0][2/4] Epoch: [0][3/4] Epoch: [0][4/4] Epoch: [1][1/4] Epoch: [1][2/4] Epoch: [1][3/4] Epoch: [1][4/4] "
check "dummy: 4 test lines in format" test "$(count "$out" "$test_re")" -eq 4
check "dummy: 2 summaries in format" test "$(count "$out" "$summary_re")" -eq 2
# the running average: Loss (avg) of batch 2 is the mean of batches 1 and 2 (equal sizes)
l1=$(sed -nE 's/^Epoch: \[0\]\[1\/4\].*Loss ([^ ]+) .*/\1/p' <<<"$out")
l2=$(sed -nE 's/^Epoch: \[0\]\[2\/4\].*Loss ([^ ]+) \(([^)]+)\).*/\1 \2/p' <<<"$out")
check "dummy: Loss avg of 2 batches ($l1, $l2)" awk -v a="$l1" -v b="${l2% *}" -v m="${l2#* }" \
  'BEGIN { d = (a + b) / 2 - m; if (d < 0) d = -d; exit !(a != "" && d <= 1e-4 * m) }'
check "dummy: checkpoint file" test -s "$tmp/dummy/checkpoint.pth.tar"
# model_best.pth.tar is written when an epoch's Acc@1 beats the best so far (0 at the start), as in
# the original: on random data both epochs may score 0, and then there is none
top1=$(sed -nE 's/^ \*   Acc@1 ([0-9.]+) .*/\1/p' <<<"$out" | sort -g | tail -n 1)
if awk -v a="$top1" 'BEGIN { exit !(a > 0) }'; then
  check "dummy: model_best.pth.tar (best Acc@1 $top1)" test -s "$tmp/dummy/model_best.pth.tar"
else
  check "dummy: no model_best.pth.tar (Acc@1 stayed 0)" test ! -e "$tmp/dummy/model_best.pth.tar"
fi
info=$("$bin" -e "local c = torch.load('$tmp/dummy/checkpoint.pth.tar'); local n = 0
  for _ in pairs(c.state_dict) do n = n + 1 end
  print(c.epoch, c.arch, n, c.state_dict['fc.weight'].shape, c.scheduler.last_epoch, c.optimizer.param_groups[1].momentum,
    #c.optimizer.param_groups[1].params, torch.is_tensor(c.best_acc1))" 2>&1)
check "dummy: checkpoint loads back ($info)" test "$info" = "2	resnet18	122	torch.Size([1000, 512])	2	0.9	62	true"

# ---- a tiny ImageFolder: the loss falls; resume; evaluate ----
"$bin" -e "local tv = require 'torchvision'
  torch.manual_seed(0)
  for _, split in ipairs({ 'train', 'val' }) do
    for _, c in ipairs({ 'bright', 'dark' }) do os.execute('mkdir -p $tmp/img/' .. split .. '/' .. c) end
    for i = 0, (split == 'train' and 8 or 4) - 1 do
      local g = torch.rand(3, 40, 48) * 0.2
      tv.utils.save_image(g + 0.75, string.format('$tmp/img/%s/bright/%02d.png', split, i))
      tv.utils.save_image(g + 0.05, string.format('$tmp/img/%s/dark/%02d.png', split, i))
    end
  end"
mkdir -p "$tmp/folder"
out=$(run folder "$tmp/img" --epochs 4 -b 4 -p 1 -j 2 --lr 0.01 --seed 1)
rc=$?
check "folder: exit 0" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || echo "$out" | tail -5
check "folder: 16 training lines [i/4]" test "$(count "$out" "$train_re")" -eq 16 -a "$(count "$out" '^Epoch: \[[0-3]\]\[[1-4]/4\]')" -eq 16
check "folder: 8 test lines [i/2]" test "$(count "$out" "$test_re")" -eq 8 -a "$(count "$out" '^Test: \[[12]/2\]')" -eq 8
avg() { sed -nE "s/^Epoch: \[$1\]\[4\/4\].*Loss [^ ]+ \(([^)]+)\).*/\1/p" <<<"$out"; }
a0=$(avg 0) a3=$(avg 3)
check "folder: training loss falls ($a0 -> $a3)" awk -v a="$a0" -v b="$a3" 'BEGIN { exit !(a != "" && b < 0.2 * a) }'
last=$(grep -E '^Epoch: \[3\]\[4/4\]' <<<"$out")
check "folder: Acc@1 of the last epoch over 50% ($last)" matches "$last" 'Acc@1 [ 0-9]{2}[0-9]\.[0-9]{2} \(( [5-9][0-9]|100)\.[0-9]{2}\)'
mkdir -p "$tmp/folder2"
same=$(run folder2 "$tmp/img" --epochs 2 -b 4 -p 1 -j 0 --lr 0.01 --seed 1 | grep -E '^Epoch' | sed -E 's/Time [^L]*//')
check "folder: --seed 1 again (no workers) gives the same losses" \
  test "$same" = "$(grep -E '^Epoch: \[[01]\]' <<<"$out" | sed -E 's/Time [^L]*//')"
res=$(run folder "$tmp/img" --epochs 6 -b 4 -p 1 -j 0 --lr 0.01 --resume checkpoint.pth.tar)
check "resume: loading line" has "$res" "=> loading checkpoint 'checkpoint.pth.tar'"
check "resume: loaded line" has "$res" "=> loaded checkpoint 'checkpoint.pth.tar' (epoch 4)"
check "resume: epochs 4 and 5 only" test "$(grep -oE '^Epoch: \[[0-9]+\]' <<<"$res" | sort -u | tr '\n' ' ')" = "Epoch: [4] Epoch: [5] "
ep=$("$bin" -e "local c = torch.load('$tmp/folder/checkpoint.pth.tar'); print(c.epoch, c.scheduler.last_epoch,
  c.optimizer.state[0].momentum_buffer ~= nil)" 2>&1)
check "resume: checkpoint of epoch 6 ($ep)" test "$ep" = "6	6	true"
best=$("$bin" -e "print(string.format('%.3f', torch.load('$tmp/folder/model_best.pth.tar').best_acc1:item()))" 2>&1)
ev=$(run folder "$tmp/img" -b 4 -p 1 -j 0 -e --resume model_best.pth.tar)
check "evaluate: no training" test "$(count "$ev" '^Epoch')" -eq 0
check "evaluate: 2 test lines" test "$(count "$ev" "$test_re")" -eq 2
check "evaluate: Acc@1 is the checkpoint's best_acc1 ($best)" matches "$ev" "^ \*   Acc@1 $best Acc@5 100\.000$"
check "no checkpoint found" has "$(run folder "$tmp/img" -b 4 -j 0 -e --resume nosuch.pth)" "=> no checkpoint found at 'nosuch.pth'"

# ---- 2 gloo ranks through the launcher ----
port=$("$bin" -e 'print(torch._dist.free_port())')
mkdir -p "$tmp/ddp"
ddp=$(cd "$tmp/ddp" && timeout 120 "$bin" --nproc-per-node 2 -l small_images "$main" --dummy --multiprocessing-distributed \
  --world-size 1 --rank 0 --dist-url "tcp://127.0.0.1:$port" --dist-backend gloo -b 4 -p 1 --epochs 1 -j 0 2>&1)
rc=$?
check "2 ranks: exit 0" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || echo "$ddp" | tail -5
for r in 0 1; do
  mine=$(sed -nE "s/^\[rank$r\]: //p" <<<"$ddp")
  check "rank $r: 2 batches of its 8 training images" test "$(count "$mine" '^Epoch: \[0\]\[[12]/2\]')" -eq 2
  check "rank $r: 1 test batch of its 4" test "$(count "$mine" '^Test: \[1/1\]')" -eq 1
  acc[$r]=$(sed -nE 's/^Test: \[1\/1\].*Acc@5 [^(]*\( *([0-9.]+)\)$/\1/p' <<<"$mine")
  sum[$r]=$(grep -E '^ \* ' <<<"$mine")
done
check "2 ranks: summaries equal (${sum[0]} | ${sum[1]})" test -n "${sum[0]}" -a "${sum[0]}" = "${sum[1]}"
mean=$(awk -v a="${acc[0]}" -v b="${acc[1]}" 'BEGIN { printf "%.3f", (a + b) / 2 }')
check "2 ranks: Acc@5 all-reduced (mean of ${acc[0]} and ${acc[1]})" matches "${sum[0]}" "Acc@5 $mean$"
check "2 ranks: checkpoint written" test -s "$tmp/ddp/checkpoint.pth.tar"
# env://, 9 validation images: 4 a rank, the 9th validated after by both ranks as batch [2/2]
ddp=$(cd "$tmp/ddp" && IMAGENET_TEST_VAL=9 timeout 120 "$bin" --nproc-per-node 2 -l small_images "$main" --dummy \
  --multiprocessing-distributed --dist-url env:// --dist-backend gloo -b 4 -p 1 -j 0 -e 2>&1)
check "env://: exit 0" [ $? -eq 0 ]
check "env://: both ranks validate the leftover image" test "$(count "$ddp" '^\[rank[01]\]: Test: \[2/2\]')" -eq 2
for r in 0 1; do
  a[$r]=$(sed -nE "s/^\[rank$r\]: Test: \[1\/2\].*Acc@5 [^(]*\( *([0-9.]+)\)$/\1/p" <<<"$ddp")
  x[$r]=$(sed -nE "s/^\[rank$r\]: Test: \[2\/2\].*Acc@5 +([0-9.]+) .*/\1/p" <<<"$ddp")
done
for r in 0 1; do
  want=$(awk -v a="${a[0]}" -v b="${a[1]}" -v x="${x[$r]}" 'BEGIN { printf "%.3f", (4 * a + 4 * b + x) / 9 }')
  check "env://: rank $r's Acc@5 = (4 a0 + 4 a1 + its leftover) / 9 = $want" matches "$ddp" "^\[rank$r\]:  \*   Acc@1 [0-9.]+ Acc@5 $want$"
done

# ---- errors ----
err=$(cd "$tmp" && "$bin" "$main" -a nosuch 2>&1)
check "bad arch: exit 2" [ $? -eq 2 ]
check "bad arch: message" has "$err" "error: argument -a/--arch: invalid choice: 'nosuch' (choose from 'alexnet',"
err=$(cd "$tmp" && "$bin" "$main" "$tmp/nodata" -j 0 2>&1)
check "missing data: exit non-zero" [ $? -ne 0 ]
check "missing data: names the folder" has "$err" "cannot list '$tmp/nodata/train': No such file or directory"
err=$(cd "$tmp" && "$bin" "$main" --pretrained --dummy 2>&1)
check "--pretrained: says no downloads" has "$err" "nnrepl downloads nothing at run time"
err=$(cd "$tmp" && "$bin" "$main" --multiprocessing-distributed --dummy 2>&1)
check "--multiprocessing-distributed alone: exit non-zero" [ $? -ne 0 ]
check "--multiprocessing-distributed alone: names the launcher" has "$err" "start one process per GPU with the launcher instead: nnrepl --nproc-per-node N"

finish
