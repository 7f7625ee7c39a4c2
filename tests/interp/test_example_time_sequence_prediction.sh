#!/usr/bin/env bash
# The port of pytorch/examples time_sequence_prediction (scripts/examples/time_sequence_prediction):
# generate_sine_wave.lua writes traindata.pt, 100 float64 sine waves of 1000 points (checked
# by sin(a+h) + sin(a-h) = 2 cos(h) sin(a)); train.lua runs 2 L-BFGS steps on 6 short waves
# made here, prints the original's lines, lowers the loss and writes predict0.txt and
# predict1.txt (the original's plots as text); a bad flag and a missing traindata.pt fail.
# Usage: bash tests/interp/test_example_time_sequence_prediction.sh build/nnrepl
bin=${1:?usage: test_example_time_sequence_prediction.sh path/to/nnrepl}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
root=$(cd "$(dirname "$0")/../.." && pwd)
ex=$root/scripts/examples/time_sequence_prediction
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$root/tests/interp/lib.sh"

mkdir "$tmp/gen" "$tmp/train" "$tmp/empty"
(cd "$tmp/gen" && "$bin" "$ex/generate_sine_wave.lua")
check "generate_sine_wave: exit 0" [ $? -eq 0 ]
got=$(cd "$tmp/gen" && "$bin" -e "local d = torch.load('traindata.pt')
  local err = (d[':, 2:'] + d[':, :-2'] - 2 * math.cos(1 / 20) * d[':, 1:-1']):abs():max():item()
  print(d.dtype, d.shape, err < 1e-12, d:abs():max():item() <= 1)" 2>&1)
check "traindata.pt: float64 [100, 1000] sine waves of period 40 pi ($got)" \
  test "$got" = "torch.float64	torch.Size([100, 1000])	true	true"

# 6 waves of 31 points: train.lua trains on the last 3 and tests on the first 3
(cd "$tmp/train" && "$bin" -e 'torch.save(torch.sin((torch.arange(31):unsqueeze(0)
  + torch.tensor({{-30}, {0}, {17}, {40}, {-55}, {9}})):double() / 20), "traindata.pt")')
out=$(cd "$tmp/train" && "$bin" "$ex/train.lua" --steps 2 2>"$tmp/err")
rc=$?
check "train: exit 0" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || cat "$tmp/err"
check "train: STEP lines as Python's print('STEP: ', i)" test "$(grep '^STEP' <<<"$out" | tr '\n' '|')" = "STEP:  0|STEP:  1|"
check "train: 20 loss lines a step" test "$(grep -cE '^loss: [0-9]+\.[0-9]+(e-[0-9]+)?$' <<<"$out")" -eq 40
check "train: a test loss line a step" test "$(grep -cE '^test loss: [0-9]+\.[0-9]+(e-[0-9]+)?$' <<<"$out")" -eq 2
check "train: only these lines" test "$(grep -cvE '^(STEP:  [01]|loss: .*|test loss: .*)$' <<<"$out")" -eq 0
first=$(grep -m1 '^loss:' <<<"$out" | cut -d' ' -f2)
last=$(grep '^loss:' <<<"$out" | tail -n1 | cut -d' ' -f2)
t0=$(grep '^test loss:' <<<"$out" | head -n1 | cut -d' ' -f3)
t1=$(grep '^test loss:' <<<"$out" | tail -n1 | cut -d' ' -f3)
check "train: the loss falls tenfold ($first -> $last)" less "$last" "$(awk -v a="$first" 'BEGIN { print a / 10 }')"
check "train: the test loss falls ($t0 -> $t1)" less "$t1" "$t0"
for i in 0 1; do
  f=$tmp/train/predict$i.txt
  check "predict$i.txt: header" test "$(head -n1 "$f" 2>/dev/null)" = "# t y0 y1 y2; t < 30: fitted to the input, t >= 30: predicted"
  check "predict$i.txt: 1030 rows of t and 3 values" \
    test "$(awk 'NR > 1 && NF == 4 && $1 == NR - 2 && $2 + 0 == $2 { n++ } END { print n }' "$f" 2>/dev/null)" = 1030
done
differ() { ! cmp -s "$1" "$2"; }
check "predict1.txt differs from predict0.txt" differ "$tmp/train/predict0.txt" "$tmp/train/predict1.txt"

err=$(cd "$tmp/train" && "$bin" "$ex/train.lua" --steps x 2>&1)
check "bad --steps: exit 2" [ $? -eq 2 ]
check "bad --steps: argparse's message" has "$err" "train.lua: error: argument --steps: invalid int value: 'x'"
help=$(cd "$tmp/train" && "$bin" "$ex/train.lua" --help 2>&1)
check "--help lists --steps" matches "$help" '--steps STEPS +steps to run'
err=$(cd "$tmp/empty" && "$bin" "$ex/train.lua" 2>&1)
check "no traindata.pt: exit non-zero" [ $? -ne 0 ]
check "no traindata.pt: the error names it" has "$err" "cannot open 'traindata.pt': No such file or directory"

finish
