#!/usr/bin/env bash
# The port of pytorch/examples gcn (scripts/examples/gcn) on a generated graph in Cora's format
# (tests/interp/cora_tiny.lua: 1700 papers, 30 words, 3 classes; the split needs more than
# 1500 nodes): the original's lines and formats, the loss falls and the accuracy rises well
# above chance, --dry-run runs one epoch, --include-bias adds biases; the loader's tensors are
# checked against a plain loop; a bad flag and missing Cora files give clear errors.
# Usage: bash tests/interp/test_example_gcn.sh build/nnrepl
bin=${1:?usage: test_example_gcn.sh path/to/nnrepl}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
root=$(cd "$(dirname "$0")/../.." && pwd)
ex=$root/scripts/examples/gcn
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$root/tests/interp/lib.sh"

mkdir -p "$tmp/run/cora" "$tmp/empty"
"$bin" "$root/tests/interp/cora_tiny.lua" "$tmp/run/cora" 1700 30
check "cora_tiny.lua wrote the graph" test -s "$tmp/run/cora/cora.cites"

out=$(cd "$tmp/run" && "$bin" "$ex/main.lua" --epochs 40 --val-every 10 --no-accel 2>"$tmp/err")
rc=$?
check "train: exit 0" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || cat "$tmp/err"
check "train: the first lines" test "$(head -n2 <<<"$out" | tr '\n' '|')" = "Using cpu device|Loading dataset...|"
epoch_re='^Epoch: [0-9]{4} \([0-9]+\.[0-9]{4}s\) loss_train: [0-9]+\.[0-9]{4} acc_train: [0-9]\.[0-9]{4} loss_val: [0-9]+\.[0-9]{4} acc_val: [0-9]\.[0-9]{4}$'
check "train: 4 epoch lines in the original's format" test "$(grep -cE "$epoch_re" <<<"$out")" -eq 4
check "train: epochs 10, 20, 30, 40" test "$(grep -oE '^Epoch: [0-9]+' <<<"$out" | tr '\n' ' ')" = "Epoch: 0010 Epoch: 0020 Epoch: 0030 Epoch: 0040 "
check "train: the test line" test "$(grep -cE '^Test set results: loss [0-9]+\.[0-9]{4} accuracy [0-9]\.[0-9]{4}$' <<<"$out")" -eq 1
check "train: nothing else printed" test "$(wc -l <<<"$out")" -eq 7
field() { grep '^Epoch' <<<"$out" | sed -n "$1p" | awk -v k="$2:" '{ for (i = 1; i < NF; i++) if ($i == k) print $(i + 1) }'; }
l1=$(field 1 loss_train) l4=$(field 4 loss_train) v1=$(field 1 loss_val) v4=$(field 4 loss_val)
check "train: the training loss falls ($l1 -> $l4)" less "$l4" "$(awk -v a="$l1" 'BEGIN { print a * 0.8 }')"
check "train: the validation loss falls ($v1 -> $v4)" less "$v4" "$v1"
acc=$(grep '^Test set' <<<"$out" | awk '{ print $NF }')
check "train: test accuracy well above chance (1/3): $acc" less 0.6 "$acc"

out=$(cd "$tmp/run" && "$bin" "$ex/main.lua" --dry-run --val-every 1 --include-bias --hidden-dim 4 2>&1)
check "--dry-run: one epoch, then the test line" test "$(grep -cE "$epoch_re" <<<"$out") $(grep -c '^Test set' <<<"$out")" = "1 1"

# the loader: sparse features with unit row sums (or 0 for a paper without words) and D^-1/2 (A + I) D^-1/2 against plain Lua
got=$(cd "$tmp/run" && "$bin" -e "package.path = '$ex/?.lua;' .. package.path
  local d = require 'data'
  local x, y, a = d.load_cora('cora')
  local X, L, E = d.read_cora('cora')
  local V = X:size(0)
  local deg = {}
  for i = 1, V do deg[i] = 1 end
  local e = E:tolist()
  for _, p in ipairs(e) do deg[p[1] + 1] = deg[p[1] + 1] + 1 end
  local A = a:to_dense()
  local err = 0
  for k = 1, 50 do
    local p = e[k]
    local i, j = p[1], p[2]
    local m = 0
    for _, q in ipairs(e) do if q[1] == i and q[2] == j then m = m + 1 end end
    if i == j then m = m + 1 end
    err = math.max(err, math.abs(A[i][j]:item() - m / math.sqrt(deg[i + 1] * deg[j + 1])))
  end
  local rows = x:to_dense():sum(1)
  print(x.is_sparse, a.is_sparse, y.dtype, y:max():item(), err < 1e-6,
    torch.minimum((rows - 1):abs(), rows):max():item() < 1e-5, A:diagonal():min():item() > 0)" 2>&1)
check "load_cora: sparse features and adjacency, labels 0..2, values of the plain loop ($got)" \
  test "$got" = "true	true	torch.int64	2	true	true	true"

err=$(cd "$tmp/run" && "$bin" "$ex/main.lua" --epochs x 2>&1)
check "bad --epochs: exit 2" [ $? -eq 2 ]
check "bad --epochs: argparse's message" has "$err" "main.lua: error: argument --epochs: invalid int value: 'x'"
help=$(cd "$tmp/run" && "$bin" "$ex/main.lua" --help 2>&1)
check "--help lists --include-bias" has "$help" "use bias term in convolutions (default: False)"
err=$(cd "$tmp/empty" && "$bin" "$ex/main.lua" 2>&1)
check "no Cora files: exit non-zero" [ $? -ne 0 ]
check "no Cora files: the error names the file and what to do" has "$err" "cannot open './cora/cora.content'"
check "no Cora files: says there is no download" has "$err" "there is no download"

finish
