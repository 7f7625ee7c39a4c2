#!/usr/bin/env bash
# Document 004's three single-GPU programs (scripts/train_without.lua, train_autocast.lua,
# train_GradScaler.lua) on fake CIFAR-shaped data with tiny settings: each runs to the
# end, prints the document's lines, writes a checkpoint per epoch that torch.load reads
# back with PyTorch's AlexNet keys and a TensorBoard event file; autocast's first loss is
# within bfloat16 precision of float32's, and the GradScaler run's equals autocast's.
# Usage: bash tests/interp/test_train_amp.sh build/nnrepl
bin=${1:?usage: test_train_amp.sh path/to/nnrepl}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0

check() { # name, then a command that succeeds when the check passes
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $name"; fi
}
has() { grep -qF -- "$2" <<<"$1"; }
matches() { grep -qE -- "$2" <<<"$1"; }

declare -A first_loss
for name in train_without train_autocast train_GradScaler; do
  dir=$tmp/$name
  out=$(cd "$tmp" && "$bin" "$root/scripts/$name.lua" --fake-data --fake-size 4 --epochs 1 --batch_size 4 --img_size 64 \
    --checkpoint "$dir/checkpoint" --tensorboard_log "$dir/tb" --print-every 1 2>"$dir.err")
  rc=$?
  check "$name: exit 0" [ "$rc" -eq 0 ]
  [ "$rc" -eq 0 ] || { cat "$dir.err"; continue; }
  check "$name: CUDA line" matches "$out" '^CUDA available: (True|False)$'
  check "$name: dataset size" has "$out" "the train dataset size is 4"
  check "$name: epoch header" has "$out" " -----------------the 0 number of training epoch --------------"
  check "$name: progress line" matches "$out" '^Epoch: 0 \| Iteration: 1 \| lr: 0\.0001 \| loss: [0-9.e-]+ \| np\.mean\(loss\): [0-9.e-]+ $'
  check "$name: epoch end" matches "$out" '^epoch 0 is finished, and time is [0-9]+h[0-9]+m[0-9]+s$'
  check "$name: save line" has "$out" "Save state, iter: 0 "
  check "$name: finished line" matches "$out" '^The finished time is [0-9]+h[0-9]+m[0-9]+s$'
  check "$name: checkpoints" test -s "$dir/checkpoint/AlexNet_0.pth" -a -s "$dir/checkpoint/AlexNet.pth"
  check "$name: event file" compgen -G "$dir/tb/events.out.tfevents.*" >/dev/null
  keys=$("$bin" -e "local sd = torch.load('$dir/checkpoint/AlexNet.pth'); print(sd['features.0.weight'].shape, sd['classifier.6.bias'].dtype)" 2>&1)
  check "$name: checkpoint keys ($keys)" has "$keys" "torch.Size([64, 3, 11, 11])	torch.float32"
  first_loss[$name]=$(sed -nE 's/^Epoch: 0 \| Iteration: 1 \| lr: [^|]*\| loss: ([^ ]+) .*/\1/p' <<<"$out")
done

close() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && b != "" && d <= t) }'; }
check "autocast's loss near float32's (${first_loss[train_autocast]} vs ${first_loss[train_without]})" \
  close "${first_loss[train_autocast]}" "${first_loss[train_without]}" 0.05
check "GradScaler's loss equals autocast's" test -n "${first_loss[train_GradScaler]}" -a "${first_loss[train_GradScaler]}" = "${first_loss[train_autocast]}"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
