#!/usr/bin/env bash
# pytorch/examples word_language_model ported (scripts/examples/word_language_model): on a tiny
# corpus written here, main.lua trains an LSTM with tied weights and a Transformer for a few
# epochs, printing the original's lines; the validation loss falls, a worse epoch anneals the
# learning rate by 4, the best model is saved whole and loads back (classes, tied weights, the
# same test loss), the ONNX export is written, --dry-run runs one batch an epoch, and
# generate.lua samples words of the corpus from each saved model. Bad flags and a missing
# corpus fail with clear messages.
# Usage: bash tests/interp/test_example_word_language_model.sh build/nnrepl
bin=${1:?usage: test_example_word_language_model.sh path/to/nnrepl}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
root=$(cd "$(dirname "$0")/../.." && pwd)
ex=$root/scripts/examples/word_language_model
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$root/tests/interp/lib.sh"

# the corpus: 14 words in a repeating order, lines of 3 to 8 words (15 tokens with <eos>)
mkdir -p "$tmp/data"
# (line lengths from a Park-Miller generator, the same under every awk, unlike rand())
awk 'BEGIN { split("the cat sat on mat a dog ran to park and big red ball", w, " "); s = 7
  split("train valid test", files, " "); n["train"] = 100; n["valid"] = 15; n["test"] = 15
  for (fi = 1; fi <= 3; fi++) { f = files[fi]; out = "'"$tmp/data/"'" f ".txt"
    for (i = 0; i < n[f]; i++) { s = (s * 16807) % 2147483647; k = 3 + s % 6; line = ""
      for (j = 0; j < k; j++) line = line (j ? " " : "") w[(i * 3 + j) % 14 + 1]
      print line > out } } }'
small="--data $tmp/data --emsize 16 --nhid 16 --bptt 8 --batch_size 4"
log_re='^\| epoch +[0-9]+ \| +[0-9]+/ +[0-9]+ batches \| lr [0-9]+\.[0-9]{2} \| ms/batch +[0-9]+\.[0-9]{2} \| loss +[0-9]+\.[0-9]{2} \| ppl +[0-9]+\.[0-9]{2}$'
end_re='^\| end of epoch +[0-9]+ \| time: +[0-9]+\.[0-9]{2}s \| valid loss +[0-9]+\.[0-9]{2} \| valid ppl +[0-9]+\.[0-9]{2}$'
valid() { sed -nE "s/^\| end of epoch +$2 \|.*valid loss +([0-9.]+) .*/\1/p" <<<"$1"; }

# ---- LSTM, tied weights, learning rate 40 (high: some epoch is worse than the best, so the next runs at lr / 4) ----
out=$(cd "$tmp" && "$bin" "$ex/main.lua" $small --tied --epochs 4 --lr 40 --log-interval 5 --save "$tmp/lstm.pt" \
  --onnx-export "$tmp/lstm.onnx" 2>"$tmp/err")
rc=$?
check "lstm: exit 0" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || cat "$tmp/err"
check "lstm: device line" has "$out" "Using device: cpu"
# batches an epoch: the stream of words and <eos> cut into 4 columns, bptt 8 at a time
batches=$(awk -v b=4 -v t=8 '{ n += NF + 1 } END { r = int(n / b) - 1; print int((r + t - 1) / t) }' "$tmp/data/train.txt")
check "lstm: log lines" test "$(grep -cE "$log_re" <<<"$out")" -eq $((4 * ((batches - 1) / 5)))
check "lstm: first log line" matches "$out" "^\\| epoch   1 \\|     5/ +$batches batches \\| lr 40\\.00 \\|"
check "lstm: end-of-epoch lines" test "$(grep -cE "$end_re" <<<"$out")" -eq 4
check "lstm: rules" test "$(grep -cxE -- '-{89}' <<<"$out")" -eq 8 -a "$(grep -cxE '={89}' <<<"$out")" -eq 2
# the rule: an epoch whose validation loss is not below the best so far divides lr by 4
lrs=$(sed -nE 's/^\| epoch +([0-9]+) \| +5\/.* lr ([0-9.]+) .*/\2/p' <<<"$out" | tr '\n' ' ')
vals=$(for e in 1 2 3 4; do valid "$out" $e; done | tr '\n' ' ')
check "lstm: lr / 4 after each epoch no better than the best (lr $lrs, valid $vals)" awk -v l="$lrs" -v v="$vals" 'BEGIN {
  split(l, lr, " "); split(v, va, " "); best = va[1]
  for (e = 2; e <= 4; e++) { want = va[e - 1] < best || e == 2 ? lr[e - 1] : lr[e - 1] / 4
    if (e > 2 && va[e - 1] < best) best = va[e - 1]
    if (lr[e] + 0 != want + 0) exit 1 }
  exit !(lr[1] == 40) }'
check "lstm: validation loss falls ($(valid "$out" 4) < $(valid "$out" 1))" less "$(valid "$out" 4)" "$(valid "$out" 1)"
test_loss=$(sed -nE 's/^\| End of training \| test loss +([0-9.]+) \| test ppl +[0-9.]+$/\1/p' <<<"$out")
check "lstm: test line ($test_loss)" test -n "$test_loss"
check "lstm: onnx line" has "$out" "The model is also exported in ONNX format at $(realpath "$tmp")/lstm.onnx."
check "lstm: onnx file" test -s "$tmp/lstm.onnx"
back=$(cd "$ex" && "$bin" -e "local M = require 'model'
  local m = torch.load('$tmp/lstm.pt', {weights_only = false})
  print(m.__name, m.rnn.__name, m.rnn_type, rawequal(m.decoder.weight, m.encoder.weight), #m:parameters())" 2>&1)
check "lstm: saved model loads back ($back)" test "$back" = "RNNModel	LSTM	LSTM	true	10"
refused=$(cd "$ex" && "$bin" -e "require 'model'; torch.load('$tmp/lstm.pt')" 2>&1)
check "lstm: weights_only refuses an unlisted class" has "$refused" "Unsupported global: RNNModel"

gen=$(cd "$tmp" && "$bin" "$ex/generate.lua" --data "$tmp/data" --checkpoint "$tmp/lstm.pt" --outf "$tmp/gen.txt" \
  --words 45 --log-interval 20 2>&1)
check "generate lstm: log lines ($gen)" test "$gen" = "$(printf '| Generated 0/45 words\n| Generated 20/45 words\n| Generated 40/45 words')"
check "generate lstm: 45 words, 20 a line" test "$(wc -w <"$tmp/gen.txt")" -eq 45 -a "$(wc -l <"$tmp/gen.txt")" -eq 2
check "generate lstm: words of the corpus" test -z "$(tr ' ' '\n' <"$tmp/gen.txt" | grep -vxE 'the|cat|sat|on|mat|a|dog|ran|to|park|and|big|red|ball|<eos>|')"
gen2=$(cd "$tmp" && "$bin" "$ex/generate.lua" --data "$tmp/data" --checkpoint "$tmp/lstm.pt" --outf "$tmp/gen2.txt" \
  --words 45 --log-interval 20 2>&1)
check "generate: same seed, same words" cmp -s "$tmp/gen.txt" "$tmp/gen2.txt"

# ---- Transformer ----
out=$(cd "$tmp" && "$bin" "$ex/main.lua" $small --model Transformer --nlayers 2 --epochs 2 --lr 1 --log-interval 10 \
  --save "$tmp/tr.pt" 2>"$tmp/err")
rc=$?
check "transformer: exit 0" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || cat "$tmp/err"
check "transformer: log lines" test "$(grep -cE "$log_re" <<<"$out")" -eq $((2 * ((batches - 1) / 10)))
check "transformer: validation loss falls ($(valid "$out" 2) < $(valid "$out" 1))" less "$(valid "$out" 2)" "$(valid "$out" 1)"
check "transformer: test line" matches "$out" '^\| End of training \| test loss +[0-9.]+ \| test ppl +[0-9.]+$'
gen=$(cd "$tmp" && "$bin" "$ex/generate.lua" --data "$tmp/data" --checkpoint "$tmp/tr.pt" --outf "$tmp/gen3.txt" \
  --words 25 --log-interval 20 --temperature 0.5 2>&1)
check "generate transformer: 25 words" test "$(wc -w <"$tmp/gen3.txt")" -eq 25

# ---- --dry-run: one batch an epoch, no log line ----
out=$(cd "$tmp" && "$bin" "$ex/main.lua" $small --dry-run --epochs 2 --log-interval 1 --save "$tmp/dry.pt" 2>&1)
check "dry-run: exit 0, two epochs, no log line" test "$?" -eq 0 -a "$(grep -cE "$end_re" <<<"$out")" -eq 2 \
  -a "$(grep -cE "$log_re" <<<"$out")" -eq 0

# ---- errors ----
err=$(cd "$tmp" && "$bin" "$ex/main.lua" --data "$tmp/nowhere" 2>&1)
check "missing corpus: exit non-zero" test $? -ne 0
check "missing corpus: names the file ($err)" has "$err" "$tmp/nowhere/train.txt does not exist"
err=$(cd "$tmp" && "$bin" "$ex/main.lua" $small --model LSTMX 2>&1)
check "bad model: message" has "$err" "An invalid option for \`--model\` was supplied"
err=$(cd "$tmp" && "$bin" "$ex/main.lua" $small --tied --nhid 8 2>&1)
check "tied sizes: message" has "$err" "When using the tied flag, nhid must be equal to emsize"
err=$(cd "$tmp" && "$bin" "$ex/main.lua" --epochz 3 2>&1)
check "unknown flag: exit 2" test $? -eq 2
check "unknown flag: message" has "$err" "unrecognized arguments: --epochz"
err=$(cd "$tmp" && "$bin" "$ex/generate.lua" --data "$tmp/data" --checkpoint "$tmp/lstm.pt" --temperature 0.0001 2>&1)
check "generate: temperature check" has "$err" "--temperature has to be greater or equal 1e-3."

finish
