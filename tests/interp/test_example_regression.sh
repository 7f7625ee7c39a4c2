#!/usr/bin/env bash
# pytorch/examples regression ported to scripts/examples/regression/main.lua, end to end (it
# has no flags and needs no data): exit status, the three printed lines and their formats, the
# final loss below the 1e-3 stop criterion after more than one batch, the learned polynomial
# close to the actual one, the same output on a second run (the default generator's fixed
# seed), and model.lua's make_features and poly_desc against hand-worked values.
# Usage: bash tests/interp/test_example_regression.sh build/nnrepl
bin=${1:?usage: test_example_regression.sh path/to/nnrepl}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
root=$(cd "$(dirname "$0")/../.." && pwd)
script=$root/scripts/examples/regression/main.lua
source "$root/tests/interp/lib.sh"

out=$("$bin" "$script" 2>&1)
rc=$?
check "exit 0" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || echo "$out"
check "three lines" [ "$(wc -l <<<"$out")" -eq 3 ]
poly='y = ([+-][0-9]+\.[0-9]{2} x\^[1-4] ){4}[+-][0-9]+\.[0-9]{2}$'
check "loss line" matches "$(sed -n 1p <<<"$out")" '^Loss: 0\.[0-9]{6} after [0-9]+ batches$'
check "learned line" matches "$(sed -n 2p <<<"$out")" $'^==> Learned function:\t'"$poly"
check "actual line" matches "$(sed -n 3p <<<"$out")" $'^==> Actual function:\t'"$poly"
check "powers 1..4 in order" matches "$(sed -n 2p <<<"$out")" 'x\^1 .* x\^2 .* x\^3 .* x\^4 '
loss=$(sed -nE 's/^Loss: ([0-9.]+) .*/\1/p' <<<"$out")
batches=$(sed -nE 's/.* after ([0-9]+) batches$/\1/p' <<<"$out")
check "stopped below 1e-3 ($loss)" awk_true "$loss < 0.001"
check "after more than 10 batches ($batches)" awk_true "$batches > 10"
coefs() { sed -n "$1p" <<<"$out" | sed -E 's/^.*y = //; s/ x\^[0-9]//g'; }
learned=$(coefs 2) actual=$(coefs 3)
check "learned ($learned) within 0.3 of actual ($actual)" awk -v l="$learned" -v a="$actual" \
  'BEGIN { n = split(l, x, " "); split(a, y, " "); if (n != 5) exit 1
           for (i = 1; i <= 5; i++) { d = x[i] - y[i]; if (d > 0.3 || d < -0.3) exit 1 } }'
check "a second run prints the same" test "$("$bin" "$script" 2>&1)" = "$out"

re=$(cd "$root/scripts/examples/regression" && "$bin" -e "
  local m = require('model')
  local X = m.make_features(torch.tensor({2.0, -1.0}))
  print(table.concat(X:flatten():tolist(), ' '))
  print(m.poly_desc(torch.tensor({1.234, -0.5, 0, 10}), torch.tensor({-3.456})))" 2>&1)
check "make_features: x..x^4 columns ($(head -n 1 <<<"$re"))" test "$(head -n 1 <<<"$re")" = "2.0 4.0 8.0 16.0 -1.0 1.0 -1.0 1.0"
check "poly_desc's format ($(tail -n 1 <<<"$re"))" test "$(tail -n 1 <<<"$re")" = \
  "y = +1.23 x^1 -0.50 x^2 +0.00 x^3 +10.00 x^4 -3.46"

finish
