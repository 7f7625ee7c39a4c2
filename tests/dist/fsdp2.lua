-- fully_shard (FSDP2) against one process training on the concatenated batches.
-- Run by test_dist.sh through the launcher with 2 and 3 ranks (gloo), or with "nccl" on GPUs.
local H = dofile(arg[0]:match("^(.*)/") .. "/harness.lua")
local dist = torch.distributed
local fsdp = dist.fsdp
local fully_shard = fsdp.fully_shard
local SD = dist.checkpoint.state_dict

H.raises(function() fully_shard(nn.Linear(2, 2)) end, "has not been initialized", "fully_shard before init_process_group")
local _, dev = H.init(arg[1])
local rank, world = dist.get_rank(), dist.get_world_size()
local B, STEPS = 3, 4
local FULL = SD.StateDictOptions { full_state_dict = true }

local Block = nn.Module:extend("Block")
function Block:__init()
  self.ln = nn.LayerNorm(8)
  self.fc1 = nn.Linear(8, 5) -- 5 rows: uneven over 2 and 3 ranks
  self.fc2 = nn.Linear(5, 8)
end
function Block:forward(x) return x + self.fc2(F.gelu(self.fc1(self.ln(x)))) end

local Net = nn.Module:extend("Net")
function Net:__init()
  self.inp = nn.Linear(6, 8)
  self.layers = nn.ModuleList({ Block(), Block() })
  self.out = nn.Linear(8, 1) -- 1 row: some ranks hold none
end
function Net:forward(x)
  x = self.inp(x)
  for _, l in pairs(self.layers) do x = l(x) end
  return self.out(x)
end

local function net(seed)
  torch.manual_seed(seed)
  return Net():to(dev)
end

local function shard_all(m, o)
  for _, l in pairs(m.layers) do fully_shard(l, o) end
  return fully_shard(m, o)
end

torch.manual_seed(7)
local X, Y = torch.randn(STEPS, B * world, 2, 6):to(dev), torch.randn(STEPS, B * world, 2, 1):to(dev)
local function slice(t, step) return t[step]:narrow(0, rank * B, B) end
local function sgd(p) return optim.SGD(p, { lr = 0.1, momentum = 0.9 }) end

local C = dofile(arg[0]:match("^(.*)/") .. "/fsdp_common.lua")(H, X, Y)
local same_state = C.same_state
local function reference(seed, steps) return C.reference(net, seed, sgd, steps) end

-- rows of dim 0 this rank keeps of n
local function rows(n)
  local c = (n + world - 1) // world
  return math.max(0, math.min(c, n - rank * c))
end

for _, case in ipairs({ { name = "reshard_after_forward=true" }, { name = "reshard_after_forward=false", keep = true } }) do
  local m = net(100)
  H.check(shard_all(m, { reshard_after_forward = not case.keep }) == m, "fully_shard returns the module")
  local sd = m:state_dict()
  H.check(sd["layers.0.fc1.weight"]:size(0) == rows(5) and sd["layers.0.fc1.weight"]:size(1) == 8
    and sd["out.bias"]:size(0) == rows(1) and sd["inp.weight"]:size(0) == rows(8),
    "%s: the state dict holds this rank's dim-0 chunks under the parameters' names", case.name)
  local n = 0
  for _ in pairs(sd) do n = n + 1 end
  H.check(n == 16 and #m:parameters() == 16, "%s: every parameter keeps its name (%d, %d)", case.name, n, #m:parameters())
  local opt = sgd(m:parameters())
  C.train(m, opt, slice, STEPS)
  H.check(nn.is_parameter(m.layers[0].fc1.weight) and m.layers[0].fc1.weight:size(0) == rows(5),
    "%s: between steps the modules hold their chunks", case.name)
  same_state(SD.get_model_state_dict(m, { options = FULL }), reference(100, STEPS), 2e-5, case.name)
end

-- the all-gathers: with reshard_after_forward each block gathers again in backward; the root never does
do
  local gathers = 0
  local orig = dist.all_gather_into_tensor
  dist.all_gather_into_tensor = function(...) gathers = gathers + 1; return orig(...) end
  for _, keep in ipairs({ false, true }) do
    local m = net(3)
    shard_all(m, { reshard_after_forward = not keep })
    gathers = 0
    local loss = F.mse_loss(m(slice(X, 0)), slice(Y, 0))
    H.check(gathers == 3, "one all-gather per fully_shard-ed module in forward (%d)", gathers)
    loss:backward()
    local want = world > 1 and not keep and 5 or 3
    H.check(gathers == want, "reshard_after_forward=%s: %d all-gathers in all, expected %d", tostring(not keep), gathers, want)
  end
  dist.all_gather_into_tensor = orig
end

-- set_requires_gradient_sync(false): local accumulation, then one reducing backward
do
  local m = net(11)
  shard_all(m)
  m:set_requires_gradient_sync(false)
  F.mse_loss(m(slice(X, 0)), slice(Y, 0)):backward()
  H.check(m.inp.weight.grad == nil, "without gradient sync the chunks get no gradient")
  m:set_requires_gradient_sync(true)
  F.mse_loss(m(slice(X, 1)), slice(Y, 1)):backward()
  local ref = net(11)
  for step = 0, 1 do F.mse_loss(ref(X[step]), Y[step]):backward() end
  local c = (8 + world - 1) // world
  H.close(m.inp.weight.grad, ref.inp.weight.grad:narrow(0, math.min(rank * c, 8), rows(8)), 1e-5,
    "the synced backward reduces both passes")
end

-- mixed precision: the module computes in param_dtype, outputs in output_dtype
do
  local m = net(5)
  for _, l in pairs(m.layers) do fully_shard(l, { mp_policy = fsdp.MixedPrecisionPolicy { param_dtype = torch.float64 } }) end
  fully_shard(m, { mp_policy = fsdp.MixedPrecisionPolicy { param_dtype = torch.float64, reduce_dtype = torch.float32,
    output_dtype = torch.float32 } })
  local seen
  m.layers[1].fc2:register_forward_hook(function(mod, input, out) seen = { mod.weight.dtype, input[1].dtype, out.dtype } end)
  local opt = sgd(m:parameters())
  local y = C.train(m, opt, slice, STEPS)
  H.check(seen[1] == torch.float64 and seen[2] == torch.float64 and seen[3] == torch.float64, "MixedPrecisionPolicy: float64 inside")
  H.check(y.dtype == torch.float32 and m.inp.weight.dtype == torch.float32 and m.inp.weight.grad.dtype == torch.float32,
    "MixedPrecisionPolicy: output_dtype, chunks and gradients in float32")
  same_state(SD.get_model_state_dict(m, { options = FULL }), reference(5, STEPS), 2e-5, "MixedPrecisionPolicy(float64)")
end

-- set_model_state_dict: a full state dict into the chunks
do
  local a, b = net(21), net(22)
  shard_all(b)
  local r = SD.set_model_state_dict(b, a:state_dict(), { options = FULL })
  H.check(#r.missing_keys == 0 and #r.unexpected_keys == 0, "set_model_state_dict: no missing or unexpected keys")
  same_state(SD.get_model_state_dict(b, { options = FULL }), a, 0, "set_model_state_dict then get_model_state_dict")
  local _ <close> = torch.no_grad()
  H.close(b(X[0]), a(X[0]), 1e-6, "the loaded sharded model computes as the full one")
end

-- errors
do
  local m = net(1)
  fully_shard(m.inp)
  H.raises(function() fully_shard(m.inp) end, "already sharded", "fully_shard twice")
  H.raises(function() fully_shard(m, { mp_policy = { param_dtype = torch.float16 } }) end, "mp_policy must be a MixedPrecisionPolicy", "a plain table policy")
  H.raises(function() fully_shard(m, { reshard_after_forward = 2 }) end, "reshard_after_forward must be a boolean", "an int reshard_after_forward")
  H.raises(function() fully_shard(m, { reshard = true }) end, "unknown keyword 'reshard'", "an unknown keyword")
  H.raises(function() fully_shard({ m.out }) end, "module must be an nn.Module", "a list of modules")
  H.raises(function() fsdp.CPUOffloadPolicy() end, "CPUOffloadPolicy is not supported", "CPU offload")
  m.inp:unshard() -- supported now (fsdp2_extras.lua): reshard() puts the chunks back
  m.inp:reshard()
  H.check(dist.checkpoint._is_sharded(SD.get_model_state_dict(m)["inp.weight"]), "the default state dict is sharded")
  H.raises(function() fully_shard(nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2):double())) end, "share a dtype", "two dtypes")
end

dist.destroy_process_group()
H.report()
