#!/usr/bin/env bash
# The port of pytorch/examples gat (scripts/examples/gat) on a generated graph in Cora's format
# (tests/interp/cora_tiny.lua: 1650 papers, 30 words, 3 classes; the split needs more than
# 1600 nodes), small settings: the original's lines and formats, the loss falls, --dry-run
# runs one epoch, --concat-heads works; a bad flag and missing Cora files give clear errors.
# Usage: bash tests/interp/test_example_gat.sh build/nnrepl
bin=${1:?usage: test_example_gat.sh path/to/nnrepl}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
root=$(cd "$(dirname "$0")/../.." && pwd)
ex=$root/scripts/examples/gat
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$root/tests/interp/lib.sh"

mkdir -p "$tmp/run/cora" "$tmp/empty"
"$bin" "$root/tests/interp/cora_tiny.lua" "$tmp/run/cora" 1650 30
check "cora_tiny.lua wrote the graph" test -s "$tmp/run/cora/cora.cites"

out=$(cd "$tmp/run" && "$bin" "$ex/main.lua" --epochs 4 --val-every 2 --hidden-dim 8 --num-heads 2 --lr 0.05 --no-accel 2>"$tmp/err")
rc=$?
check "train: exit 0" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || cat "$tmp/err"
check "train: the first lines" test "$(head -n3 <<<"$out" | tr '\n' '|')" = "Using cpu device|Dataset already downloaded...|Loading dataset...|"
epoch_re='^Epoch: [0-9]{4} \([0-9]+\.[0-9]{4}s\) loss_train: [0-9]+\.[0-9]{4} acc_train: [0-9]\.[0-9]{4} loss_val: [0-9]+\.[0-9]{4} acc_val: [0-9]\.[0-9]{4}$'
check "train: epoch lines 2 and 4 in the original's format" test "$(grep -cE "$epoch_re" <<<"$out") $(grep -oE '^Epoch: [0-9]+' <<<"$out" | tr '\n' ' ')" = "2 Epoch: 0002 Epoch: 0004 "
check "train: the test line" test "$(grep -cE '^Test set results: loss [0-9]+\.[0-9]{4} accuracy [0-9]\.[0-9]{4}$' <<<"$out")" -eq 1
check "train: nothing else printed" test "$(wc -l <<<"$out")" -eq 6
field() { grep '^Epoch' <<<"$out" | sed -n "$1p" | awk -v k="$2:" '{ for (i = 1; i < NF; i++) if ($i == k) print $(i + 1) }'; }
l1=$(field 1 loss_train) l2=$(field 2 loss_train) v1=$(field 1 loss_val) v2=$(field 2 loss_val)
check "train: the training loss falls ($l1 -> $l2)" less "$l2" "$l1"
check "train: the validation loss falls ($v1 -> $v2)" less "$v2" "$v1"
check "train: below chance's loss log(3) at the end ($l2)" less "$l2" 1.0986

out=$(cd "$tmp/run" && "$bin" "$ex/main.lua" --dry-run --val-every 1 --concat-heads --hidden-dim 4 --num-heads 2 2>&1)
check "--dry-run --concat-heads: one epoch, then the test line" test "$(grep -cE "$epoch_re" <<<"$out") $(grep -c '^Test set' <<<"$out")" = "1 1"

err=$(cd "$tmp/run" && "$bin" "$ex/main.lua" --num-heads x 2>&1)
check "bad --num-heads: exit 2" [ $? -eq 2 ]
check "bad --num-heads: argparse's message" has "$err" "main.lua: error: argument --num-heads: invalid int value: 'x'"
err=$(cd "$tmp/empty" && "$bin" "$ex/main.lua" 2>&1)
check "no Cora files: exit non-zero" [ $? -ne 0 ]
check "no Cora files: no 'already downloaded' line" test "$(grep -c 'already downloaded' <<<"$err")" -eq 0
check "no Cora files: the error names the file" has "$err" "cannot open './cora/cora.content'"

finish
