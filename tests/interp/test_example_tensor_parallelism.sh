#!/usr/bin/env bash
# scripts/examples/tensor_parallelism (pytorch/examples distributed/tensor_parallelism) through
# the launcher on Gloo ranks: tensor_parallel_example and sequence_parallel_example on 2 ranks,
# fsdp_tp_example (a 2 x 2 dp/tp mesh, tiny sizes) on 4. Checks the prints and rank 0's log
# lines, and that the weights each rank ends with, put back together, are those of one process
# training the unsharded model on the same data (a driver saves every rank's parameters when
# the script destroys its process group). Also: an odd world size, a bad flag.
# Usage: bash tests/interp/test_example_tensor_parallelism.sh build/nnrepl
bin=${1:?usage: test_example_tensor_parallelism.sh path/to/nnrepl}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=$root/scripts/examples/tensor_parallelism
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$root/tests/interp/lib.sh"

# runs a script (arg 2) with arg 1's world size; each rank saves its parameters, by name, to
# $tmp/<script>_<rank>.pt when the script destroys the process group
cat >"$tmp/drive.lua" <<LUA
local script = ...
package.path = "$dir/?.lua;" .. package.path
local dist = torch.distributed
local tp = dist.tensor.parallel
local model
local parallelize = tp.parallelize_module
tp.parallelize_module = function(m, ...) model = model or m; return parallelize(m, ...) end
local destroy = dist.destroy_process_group
dist.destroy_process_group = function(...)
  local sd = {}
  for _, e in ipairs(model:named_parameters()) do sd[e[1]] = e[2]:detach():clone() end
  torch.save(sd, string.format("$tmp/%s_%d.pt", script, dist.get_rank()))
  return destroy(...)
end
assert(loadfile("$dir/" .. script .. ".lua"))(select(2, ...))
LUA
run() { # world size, script, then flags
  local n=$1 s=$2; shift 2
  timeout 120 "$bin" --nproc-per-node "$n" "$tmp/drive.lua" "$s" "$@" 2>"$tmp/$s.err"
}

# the reference: one process, the unsharded model; prints the largest relative difference of
# the parameters put back together from the ranks' files
cat >"$tmp/ref.lua" <<LUA
local script, world = ...
world = tonumber(world)
package.path = "$dir/?.lua;" .. package.path
local function load(r) return torch.load(string.format("$tmp/%s_%d.pt", script, r)) end
local worst, n = 0, 0
local function compare(got, want)
  worst = math.max(worst, ((got - want):norm() / want:norm()):item()); n = n + 1
end
if script ~= "fsdp_tp_example" then
  local model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 5)) -- ToyModel from the default seed
  local opt = torch.optim.AdamW(model:parameters(), { lr = 0.25 })
  for i = 0, 9 do
    local inp
    if script == "tensor_parallel_example" then torch.manual_seed(i); inp = torch.rand(20, 10)
    else inp = torch.rand(20, 10):tile({ world, 1 }) end -- every rank's piece is the same
    model(inp):sum():backward() -- never zeroed, as in the examples
    opt:step()
  end
  local r0, r1 = load(0), load(1)
  compare(torch.cat({ r0["in_proj.weight"], r1["in_proj.weight"] }, 0), model[0].weight)
  compare(torch.cat({ r0["in_proj.bias"], r1["in_proj.bias"] }, 0), model[0].bias)
  compare(torch.cat({ r0["out_proj.weight"], r1["out_proj.weight"] }, 1), model[2].weight)
  compare(r0["out_proj.bias"], model[2].bias)
  compare(r1["out_proj.bias"], model[2].bias)
else
  local llama = require "llama2_model"
  local V, B, S = 64, 2, 8
  local model = llama.Transformer.from_model_args(llama.ModelArgs { dim = 16, n_layers = 2, n_heads = 4, vocab_size = V })
  model:init_weights()
  local opt = torch.optim.AdamW(model:parameters(), { lr = 3e-3 })
  local dp = world // 2
  for i = 0, 9 do
    local loss = 0
    for d = 0, dp - 1 do
      torch.manual_seed(i + d)
      loss = loss + model(torch.randint(V, { B, S })):sum()
    end
    (loss / dp):backward() -- FSDP averages over dp
    opt:step()
  end
  local ranks = {}
  for r = 0, world - 1 do ranks[r] = load(r) end
  local tp_dim = { wq = 0, wk = 0, wv = 0, w1 = 0, w3 = 0, output = 0, tok_embeddings = 0, wo = 1, w2 = 1 }
  for _, e in ipairs(model:named_parameters()) do
    local name, want = e[1], e[2]
    local per_tp = {}
    for t = 0, 1 do -- rank d * 2 + t: dp coordinate d, tp coordinate t; dp chunks along dim 0
      local chunks = {}
      for d = 0, dp - 1 do chunks[#chunks + 1] = ranks[d * 2 + t][name] end
      per_tp[t + 1] = torch.cat(chunks, 0)
    end
    local d = tp_dim[name:match("([%w_]+)%.weight$")]
    if d then compare(torch.cat(per_tp, d), want)
    else compare(per_tp[1], want); compare(per_tp[2], want) end -- the norms: replicated over tp
  end
end
print(string.format("%d %.3e", n, worst))
LUA

# tensor parallel: 2 ranks
out=$(run 2 tensor_parallel_example)
rc=$?
check "TP: exit 0" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || cat "$tmp/tensor_parallel_example.err"
err=$(cat "$tmp/tensor_parallel_example.err")
check "TP: each rank starts" [ "$(count "$out" '^\[rank[01]\]: Starting PyTorch TP example on rank [01]\.$')" -eq 2 ]
check "TP: rank 0 logs the mesh" grep -qE '^\[rank0\]: [0-9]{2}/[0-9]{2}/[0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2} [AP]M  Device Mesh created: device_mesh=DeviceMesh\(.cpu., \[0, 1\]\)$' <<<"$err"
check "TP: 10 iterations logged by rank 0 only" [ "$(count "$err" 'Tensor Parallel iter [0-9] completed$')" -eq 10 ] 
check "TP: no log line from rank 1" [ "$(count "$err" '^\[rank1\]: .*(Device Mesh|iter)')" -eq 0 ]
check "TP: training completed" has "$err" "Tensor Parallel training completed!"
r=$("$bin" "$tmp/ref.lua" tensor_parallel_example 2)
check "TP = one process ($r)" below "$(cut -d' ' -f2 <<<"$r")" 1e-5
check "TP: every parameter compared ($r)" [ "$(cut -d' ' -f1 <<<"$r")" -eq 5 ]

# sequence parallel: 2 ranks
out=$(run 2 sequence_parallel_example)
check "SP: exit 0" [ "$?" -eq 0 ]
err=$(cat "$tmp/sequence_parallel_example.err")
check "SP: each rank starts" [ "$(count "$out" '^\[rank[01]\]: Starting PyTorch Sequence Parallel example on rank [01]\.$')" -eq 2 ]
check "SP: 10 iterations logged" [ "$(count "$err" 'Sequence Parallel iter [0-9] completed$')" -eq 10 ]
check "SP: training completed" has "$err" "Sequence Parallel training completed!"
r=$("$bin" "$tmp/ref.lua" sequence_parallel_example 2)
check "SP = one process on the ranks' pieces ($r)" below "$(cut -d' ' -f2 <<<"$r")" 1e-5

# FSDP + TP: a 2 x 2 mesh
TINY="--dim 16 --n-heads 4 --vocab-size 64 --batch-size 2 --seq-len 8"
out=$(run 4 fsdp_tp_example $TINY)
rc=$?
check "2D: exit 0" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || cat "$tmp/fsdp_tp_example.err"
err=$(cat "$tmp/fsdp_tp_example.err")
check "2D: each rank starts" [ "$(count "$out" '^\[rank[0-3]\]: Starting PyTorch 2D \(FSDP \+ TP\) example on rank [0-3]\.$')" -eq 4 ]
check "2D: the 2-D mesh logged" has "$err" "Device Mesh created: device_mesh=DeviceMesh('cpu', [[0, 1], [2, 3]], mesh_dim_names=('dp', 'tp'))"
check "2D: the model logged" has "$err" "Model after parallelization sharded_model=FSDPTransformer("
check "2D: the optimizer logged" has "$err" "Creating AdamW optimizer with learning rate 0.003"
check "2D: 10 iterations" [ "$(count "$err" '2D iter [0-9] complete$')" -eq 10 ]
check "2D: completed" has "$err" "2D training successfully completed!"
r=$("$bin" "$tmp/ref.lua" fsdp_tp_example 4)
check "2D = one process on both dp ranks' batches ($r)" below "$(cut -d' ' -f2 <<<"$r")" 1e-4
check "2D: every parameter compared ($r)" [ "$(cut -d' ' -f1 <<<"$r")" -ge 20 ]

# errors
run 3 tensor_parallel_example >/dev/null
check "TP on 3 ranks: exit non-zero" [ "$?" -ne 0 ]
check "TP on 3 ranks: message" grep -qF "TP examples require even number of GPUs, but got 3 gpus" "$tmp/tensor_parallel_example.err"
timeout 60 "$bin" "$dir/fsdp_tp_example.lua" --bogus >/dev/null 2>"$tmp/bad.err"
check "bad flag: exit non-zero" [ "$?" -ne 0 ]
check "bad flag: message" grep -qF "unrecognized arguments: --bogus" "$tmp/bad.err"

finish
