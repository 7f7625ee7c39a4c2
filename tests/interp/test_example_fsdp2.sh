#!/usr/bin/env bash
# scripts/examples/fsdp2 (pytorch/examples distributed/FSDP2) on 2 Gloo ranks through the
# launcher, tiny sizes: the prints; the saved full state dicts against one process training the
# unsharded model on the same batches (plain Adam and clip_grad_norm_); a second run resuming
# from the checkpoint against 20 steps of that process; --dcp-api and --explicit-prefetching
# giving the same numbers; --mixed-precision running; a bad flag.
# Usage: bash tests/interp/test_example_fsdp2.sh build/nnrepl
bin=${1:?usage: test_example_fsdp2.sh path/to/nnrepl}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=$root/scripts/examples/fsdp2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$root/tests/interp/lib.sh"

SIZES="--n-layers 2 --vocab-size 16 --batch-size 4 --seq-len 8"
run() { # folder, then flags: example.lua on 2 ranks in the folder (checkpoints/ goes there)
  local d=$1; shift
  mkdir -p "$d" && (cd "$d" && timeout 120 "$bin" --nproc-per-node 2 "$dir/example.lua" $SIZES "$@" 2>"$d/err")
}

# one process, the whole model: the reference weights and Adam state after 10 and 20 steps
cat >"$tmp/ref.lua" <<LUA
package.path = "$dir/?.lua;" .. package.path
local M = require "model"
torch.manual_seed(0)
local model = M.Transformer(M.ModelArgs { n_layers = 2, n_heads = 4, vocab_size = 16, max_seq_len = 8, dropout_p = 0 })
local xs = {}
for i = 1, 10 do xs[i] = torch.randint(0, 16, { 4, 8 }) end
local opt = torch.optim.Adam(model:parameters(), { lr = 1e-2 })
local names = {}
for _, e in ipairs(model:named_parameters()) do names[e[2]] = e[1] end
local function dump(path)
  local sd = model:state_dict()
  for p, s in pairs(opt.state) do sd["exp_avg." .. names[p]] = s.exp_avg end
  torch.save(sd, path)
end
for step = 1, 20 do
  local loss = model(xs[(step - 1) % 10 + 1]):sum()
  loss:backward()
  torch.nn.utils.clip_grad_norm_(model:parameters(), { max_norm = 1.0 })
  opt:step()
  opt:zero_grad()
  if step % 10 == 0 then dump("$tmp/ref" .. step .. ".pt") end
end
LUA
"$bin" "$tmp/ref.lua" || { echo "the reference run failed"; exit 1; }

# the newest checkpoint in folder $1/checkpoints/$2 against ref$3.pt: prints the largest
# relative difference of the weights and of Adam's exp_avg
cat >"$tmp/cmp.lua" <<'LUA'
local base, api, ref_steps = ...
local ls = io.popen("ls -1 " .. base .. "/checkpoints/" .. api .. " | sort -n | tail -1")
local dir = base .. "/checkpoints/" .. api .. "/" .. ls:read("l")
ls:close()
local ref = torch.load(base .. "/../ref" .. ref_steps .. ".pt")
local model = torch.load(dir .. "/model_state_dict.pt")
local optim = torch.load(dir .. "/optim_state_dict.pt")
local worst, n = 0, 0
local function rel(a, b) return ((a - b):norm() / (b:norm() + 1e-12)):item() end
for k, w in pairs(model) do
  worst = math.max(worst, rel(w, ref[k])); n = n + 1
  worst = math.max(worst, rel(optim.state[k].exp_avg, ref["exp_avg." .. k]))
  assert(optim.state[k].step:item() == tonumber(ref_steps), "step count")
end
print(string.format("%d %.3e %g", n, worst, optim.param_groups[1].lr))
LUA
cmp() { "$bin" "$tmp/cmp.lua" "$@"; }

out=$(run "$tmp/a")
rc=$?
check "exit 0" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || cat "$tmp/a/err"
check "each rank names its device" [ "$(count "$out" '^\[rank[01]\]: Running on device cpu$')" -eq 2 ]
check "rank 0 prints the model" has "$out" "[rank0]: FSDPTransformer("
check "only rank 0 prints it" [ "$(count "$out" "FSDPTransformer\\(")" -eq 1 ]
check "the blocks are printed" has "$out" "[rank0]:     (0-1): 2 x FSDPTransformerBlock("
check "one checkpoint folder" [ "$(ls "$tmp/a/checkpoints/dtensor_api" | wc -l)" -eq 1 ]
r=$(cmp "$tmp/a" dtensor_api 10)
check "sharded run = one process, 10 steps ($r)" below "$(cut -d' ' -f2 <<<"$r")" 1e-5
check "all 29 parameters saved, lr kept ($r)" [ "$(cut -d' ' -f1,3 <<<"$r")" = "29 0.01" ]

sleep 0.01 # a new millisecond for the second folder
out=$(run "$tmp/a")
check "resume: exit 0" [ "$?" -eq 0 ]
check "resume: a second checkpoint folder" [ "$(ls "$tmp/a/checkpoints/dtensor_api" | wc -l)" -eq 2 ]
r=$(cmp "$tmp/a" dtensor_api 20)
check "resumed run = one process, 20 steps ($r)" below "$(cut -d' ' -f2 <<<"$r")" 1e-5

out=$(run "$tmp/b" --dcp-api --explicit-prefetching)
check "dcp api, prefetching: exit 0" [ "$?" -eq 0 ]
r=$(cmp "$tmp/b" dcp_api 10)
check "dcp api, prefetching = one process ($r)" below "$(cut -d' ' -f2 <<<"$r")" 1e-5
out=$(run "$tmp/b" --dcp-api --explicit-prefetching)
r=$(cmp "$tmp/b" dcp_api 20)
check "dcp api resumed = one process, 20 steps ($r)" below "$(cut -d' ' -f2 <<<"$r")" 1e-5
check "dcp api leaves dtensor_api alone" [ ! -e "$tmp/b/checkpoints/dtensor_api" ]

out=$(run "$tmp/c" --mixed-precision)
rc=$?
check "mixed precision: exit 0" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || cat "$tmp/c/err"
r=$(cmp "$tmp/c" dtensor_api 10)
check "mixed precision: near the float32 run ($r)" below "$(cut -d' ' -f2 <<<"$r")" 0.2
check "mixed precision: not the float32 run ($r)" awk -v a="$(cut -d' ' -f2 <<<"$r")" 'BEGIN { exit !(a > 1e-5) }'

run "$tmp/d" --bogus >/dev/null
rc=$?
check "bad flag: exit non-zero" [ "$rc" -ne 0 ]
check "bad flag: message" grep -qF "unrecognized arguments: --bogus" "$tmp/d/err"

finish
