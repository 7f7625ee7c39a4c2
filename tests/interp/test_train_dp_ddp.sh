#!/usr/bin/env bash
# Document 004's DataParallel and DistributedDataParallel programs on the CPU, fake
# CIFAR-shaped data, tiny settings. DataParallel (scripts/train_dp_*.lua): each runs to the
# end with the document's lines, checkpoints with "module." keys, an event file; autocast
# holds inside the model's forward with no region around it; eval_dp.lua reads the
# checkpoints. DDP (scripts/train_ddp_*.lua), 2 ranks over Gloo, started by hand with the
# document's flags and by the launcher: both ranks print the document's lines and train on
# different shares, only rank 0 writes checkpoints (with "module.") and logs, and the ranks'
# parameters after every optimizer step are identical and equal to the checkpoint's
# (seen through a probe loaded with -l); eval_ddp.lua reads the checkpoints. On a crafted
# checkpoint (every prediction one class) eval_dp.lua and eval_ddp.lua (2 ranks) print the
# accuracy known beforehand, and eval_dp.lua refuses a checkpoint without "module.".
# Usage: bash tests/interp/test_train_dp_ddp.sh build/nnrepl
bin=${1:?usage: test_train_dp_ddp.sh path/to/nnrepl}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0 skipped=0

check() { # name, then a command that succeeds when the check passes
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $name"; fi
}
has() { grep -qF -- "$2" <<<"$1"; }
matches() { grep -qE -- "$2" <<<"$1"; }
lacks() { ! grep -qF -- "$2" <<<"$1"; }
free_port() { "$bin" -e 'print(torch._dist.free_port())'; }
tiny=(--fake-data --fake-size 4 --epochs 1 --img_size 64 --print-every 1)
accuracy_re='^the total accuracy is tensor\((0\.[0-9]{4}|[01]\.)\)$'

# the lines every training program prints (one rank's output, prefix removed)
train_lines() { # name output
  check "$1: CUDA line" matches "$2" '^CUDA available: (True|False)$'
  check "$1: dataset size" has "$2" "the train dataset size is 4"
  check "$1: epoch header" has "$2" " -----------------the 0 number of training epoch --------------"
  check "$1: progress line" matches "$2" '^Epoch: 0 \| Iteration: 1 \| lr: 0\.0001 \| loss: [0-9.e-]+ \| np\.mean\(loss\): [0-9.e-]+ $'
  check "$1: epoch end" matches "$2" '^epoch 0 is finished, and time is [0-9]+h[0-9]+m[0-9]+s$'
  check "$1: finished line" matches "$2" '^The finished time is [0-9]+h[0-9]+m[0-9]+s$'
}
# a checkpoint's keys: all with DataParallel's/DDP's "module." prefix, PyTorch's AlexNet names
prefixed_keys() { # name file
  local keys
  keys=$("$bin" -e "local sd = torch.load('$2'); local n, bare = 0, 0
    for k in pairs(sd) do n = n + 1; if not k:find('^module%.') then bare = bare + 1 end end
    print(n, bare, sd['module.features.0.weight'].shape, sd['module.classifier.6.bias'].dtype)" 2>&1)
  check "$1: checkpoint keys ($keys)" test "$keys" = "16	0	torch.Size([64, 3, 11, 11])	torch.float32"
}
first_loss() { sed -nE 's/^Epoch: 0 \| Iteration: 1 \| lr: [^|]*\| loss: ([^ ]+) .*/\1/p' <<<"$1"; }

# ---- DataParallel ----
declare -A loss
for name in train_dp_without train_dp_autocast train_dp_GradScaler; do
  dir=$tmp/$name
  out=$(cd "$tmp" && "$bin" "$root/scripts/$name.lua" "${tiny[@]}" --batch_size 4 --checkpoint "$dir/checkpoint" \
    --tensorboard_log "$dir/tb" 2>"$dir.err")
  rc=$?
  check "$name: exit 0" [ "$rc" -eq 0 ]
  [ "$rc" -eq 0 ] || { cat "$dir.err"; continue; }
  train_lines "$name" "$out"
  check "$name: save line" has "$out" "Save state, iter: 0 "
  check "$name: checkpoints" test -s "$dir/checkpoint/AlexNet_0.pth" -a -s "$dir/checkpoint/AlexNet.pth"
  check "$name: event file" compgen -G "$dir/tb/events.out.tfevents.*" >/dev/null
  prefixed_keys "$name" "$dir/checkpoint/AlexNet.pth"
  loss[$name]=$(first_loss "$out")
  ev=$(cd "$tmp" && "$bin" "$root/scripts/eval_dp.lua" --fake-data --fake-size 4 --batch_size 4 --img_size 64 \
    --checkpoint "$dir/checkpoint" 2>&1)
  check "eval_dp on $name: size line" has "$ev" "the test dataset size is 4"
  check "eval_dp on $name: accuracy line ($ev)" matches "$ev" "$accuracy_re"
  rm -rf "$dir/checkpoint" # 2 x 244 MB
done
close() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && b != "" && d <= t) }'; }
check "DP autocast's loss near float32's (${loss[train_dp_autocast]} vs ${loss[train_dp_without]})" \
  close "${loss[train_dp_autocast]}" "${loss[train_dp_without]}" 0.05
check "DP autocast's loss is not float32's" test "${loss[train_dp_autocast]}" != "${loss[train_dp_without]}"
check "DP GradScaler's loss equals DP autocast's" test -n "${loss[train_dp_GradScaler]}" -a "${loss[train_dp_GradScaler]}" = "${loss[train_dp_autocast]}"
# the document's alexnet.py: autocast on forward holds in DataParallel with no region around the call
dtypes=$("$bin" -e "package.path = '$root/scripts/?.lua;' .. package.path
  local m = nn.DataParallel(require('cifar_common').autocast_alexnet('cpu'))
  local x = torch.rand(1, 3, 64, 64)
  print(m(x).dtype, torch.is_autocast_enabled('cpu'), require('torchvision').models.alexnet()(x).dtype)" 2>&1)
check "autocast_alexnet: bfloat16 output outside a region, plain AlexNet float32 ($dtypes)" \
  test "$dtypes" = "torch.bfloat16	false	torch.float32"

# ---- DistributedDataParallel, 2 ranks over Gloo ----
if ! "$bin" -e 'os.exit(torch.distributed.is_gloo_available() and 0 or 1)'; then
  echo "the gloo backend is not available: the DDP tests are skipped"
  skipped=$((skipped + 1))
else
  # prints every rank's parameters (a float64 sum per tensor) after each optimizer step
  cat >"$tmp/ddp_probe.lua" <<'EOF'
local step = torch.optim.AdamW.step
function torch.optim.AdamW:step(...)
  local r = table.pack(step(self, ...))
  local sums = {}
  for _, g in ipairs(self.param_groups) do
    for _, p in ipairs(g.params) do sums[#sums + 1] = string.format("%.17g", p:detach():double():sum():item()) end
  end
  print("probe: " .. table.concat(sums, " "))
  return table.unpack(r, 1, r.n)
end
EOF
  export LUA_PATH="$tmp/?.lua;;"
  for name in train_ddp_without train_ddp_autocast train_ddp_GradScaler; do
    dir=$tmp/$name
    args=("${tiny[@]}" --batch_size 2 --checkpoint "$dir/checkpoint" --tensorboard_log "$dir/tb")
    if [ "$name" = train_ddp_without ]; then # by hand, as the document starts its ranks
      how="by hand"
      port=$(free_port)
      (cd "$tmp" && timeout 120 "$bin" -l ddp_probe "$root/scripts/$name.lua" --rank 1 --world_size 2 \
        --master_addr 127.0.0.1 --master_port "$port" "${args[@]}" >"$dir.out1" 2>&1) &
      rank1=$!
      (cd "$tmp" && timeout 120 "$bin" -l ddp_probe "$root/scripts/$name.lua" --rank 0 --world_size 2 \
        --master_addr 127.0.0.1 --master_port "$port" "${args[@]}" >"$dir.out0" 2>&1)
      rc=$?
      wait $rank1 || rc=$((rc + $?))
      out0=$(cat "$dir.out0") out1=$(cat "$dir.out1")
    else # the launcher: its environment gives the flags' defaults
      how="launcher"
      all=$(cd "$tmp" && timeout 120 "$bin" --nproc-per-node 2 -l ddp_probe "$root/scripts/$name.lua" "${args[@]}" 2>&1)
      rc=$?
      out0=$(sed -n 's/^\[rank0\]: //p' <<<"$all") out1=$(sed -n 's/^\[rank1\]: //p' <<<"$all")
    fi
    check "$name ($how): both ranks exit 0" [ "$rc" -eq 0 ]
    [ "$rc" -eq 0 ] || { printf '%s\n%s\n' "$out0" "$out1" | tail -n 30; continue; }
    for r in 0 1; do
      o=out$r
      check "$name rank $r: local_size line" matches "${!o}" '^local_size: $'
      train_lines "$name rank $r" "${!o}"
    done
    check "$name: rank 0 saves" has "$out0" "Save state, iter: 0 "
    check "$name: rank 1 does not" lacks "$out1" "Save state"
    check "$name: checkpoints" test -s "$dir/checkpoint/AlexNet_0.pth" -a -s "$dir/checkpoint/AlexNet.pth"
    check "$name: one event file (rank 0's)" test "$(compgen -G "$dir/tb/events.out.tfevents.*" | wc -l)" -eq 1
    prefixed_keys "$name" "$dir/checkpoint/AlexNet.pth"
    l0=$(first_loss "$out0") l1=$(first_loss "$out1")
    check "$name: the ranks train on different shares (losses $l0, $l1)" test -n "$l0" -a -n "$l1" -a "$l0" != "$l1"
    p0=$(grep '^probe: ' <<<"$out0") p1=$(grep '^probe: ' <<<"$out1")
    check "$name: one step per rank" test "$(wc -l <<<"$p0")" -eq 1 -a -n "$p0"
    check "$name: identical parameters on both ranks" test "$p0" = "$p1"
    saved=$("$bin" -e "local sums = {}
      for _, t in pairs(torch.load('$dir/checkpoint/AlexNet.pth')) do sums[#sums + 1] = string.format('%.17g', t:double():sum():item()) end
      print('probe: ' .. table.concat(sums, ' '))" 2>&1)
    check "$name: the checkpoint holds the trained parameters" test "$saved" = "$p0"
    ev=$(cd "$tmp" && timeout 60 "$bin" "$root/scripts/eval_ddp.lua" --master_port "$(free_port)" --fake-data --fake-size 4 \
      --batch_size 4 --img_size 64 --checkpoint "$dir/checkpoint" 2>&1)
    check "eval_ddp on $name: local_size line" matches "$ev" '^local_size: $'
    check "eval_ddp on $name: size line" has "$ev" "the test dataset size is 4"
    check "eval_ddp on $name: accuracy line ($ev)" matches "$ev" "$accuracy_re"
    rm -rf "$dir/checkpoint"
  done
  unset LUA_PATH
fi

# ---- evaluation of a checkpoint that predicts class k (the first fake test label) for
# every image: the accuracy is the share of the fake test labels equal to k (cifar_common's
# fake test set: seed 1, rand then randint) ----
mkdir -p "$tmp/sure" "$tmp/sure_dp"
want=$("$bin" -e "
  local N, S = 8, 64
  torch.manual_seed(1); torch.rand(N, 3, S, S); local labels = torch.randint(0, 10, {N})
  local k = labels[0]:item()
  local model = require('torchvision').models.alexnet()
  local sd = model:state_dict()
  sd['classifier.6.weight']:zero_(); sd['classifier.6.bias']:zero_(); sd['classifier.6.bias'][k] = 1
  torch.save(sd, '$tmp/sure/AlexNet.pth')
  torch.save(nn.DataParallel(model):state_dict(), '$tmp/sure_dp/AlexNet.pth')
  print('the total accuracy is ' .. tostring(labels:eq(k):sum() / N))" 2>&1)
check "the crafted accuracy is not 0 ($want)" matches "$want" '^the total accuracy is tensor\(0\.[0-9]*[1-9][0-9]*\)$'
sure=(--fake-data --fake-size 8 --batch_size 2 --img_size 64 --checkpoint "$tmp/sure_dp")
ev=$(cd "$tmp" && "$bin" "$root/scripts/eval_dp.lua" "${sure[@]}" 2>&1)
check "eval_dp on the crafted checkpoint: $ev" test "$(tail -n 1 <<<"$ev")" = "$want"
ev=$(cd "$tmp" && "$bin" "$root/scripts/eval_dp.lua" "${sure[@]/sure_dp/sure}" 2>&1)
check "eval_dp refuses keys without module.: $(head -n 3 <<<"$ev")" has "$ev" "Missing key(s) in state_dict: \"module.features.0.weight\""
if "$bin" -e 'os.exit(torch.distributed.is_gloo_available() and 0 or 1)'; then
  ev=$(cd "$tmp" && timeout 60 "$bin" --nproc-per-node 2 "$root/scripts/eval_ddp.lua" "${sure[@]}" 2>&1)
  check "eval_ddp, 2 ranks, on the crafted checkpoint: $ev" \
    test "$(grep -cxF "[rank0]: $want" <<<"$ev")$(grep -cxF "[rank1]: $want" <<<"$ev")" = 11
fi

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
