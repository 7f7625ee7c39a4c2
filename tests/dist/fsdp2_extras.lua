-- fully_shard (FSDP2) beyond fsdp2.lua: unshard() / reshard(), forward and backward prefetch
-- lists, clip_grad_norm_ over the chunks, a 1-D sub-mesh of a 2-D mesh, and ShardedTensor's
-- torch.Size shape. Every rank trains on the same batch, so each result equals one process
-- training the whole model (the reference here).
-- Run by test_dist.sh through the launcher with 2, 3 and 4 ranks (gloo), or with "nccl" on GPUs.
local H = dofile(arg[0]:match("^(.*)/") .. "/harness.lua")
local dist = torch.distributed
local fsdp = dist.fsdp
local fully_shard = fsdp.fully_shard
local SD = dist.checkpoint.state_dict
local _, dev = H.init(arg[1])
local rank, world = dist.get_rank(), dist.get_world_size()
local FULL = SD.StateDictOptions { full_state_dict = true }

local Net = nn.Module:extend("Net")
function Net:__init()
  self.inp = nn.Linear(3, 7) -- 7 rows: uneven over 2, 3 and 4 ranks
  self.layers = nn.ModuleList({ nn.Linear(7, 7), nn.Linear(7, 7), nn.Linear(7, 7) })
  self.out = nn.Linear(7, 2)
end
function Net:forward(x)
  x = self.inp(x)
  for _, l in pairs(self.layers) do x = torch.tanh(l(x)) end
  return self.out(x)
end
local function net(seed) torch.manual_seed(seed); return Net():to(dev) end
local function shard_all(m, o)
  for _, l in pairs(m.layers) do fully_shard(l, o) end
  return fully_shard(m, o)
end
torch.manual_seed(5)
local X = torch.randn(4, 6, 3):to(dev) -- the same batches on every rank

-- steps of Adam on X with clip_grad_norm_(max_norm): the norms returned, the full state dict
local function train(m, max_norm, norm_type, before_forward)
  local opt = optim.Adam(m:parameters(), { lr = 0.05 })
  local norms = {}
  for s = 0, 3 do
    if before_forward then before_forward(m) end
    (m(X[s]):pow(2):sum() * 10):backward()
    norms[#norms + 1] = torch.nn.utils.clip_grad_norm_(m:parameters(), { max_norm = max_norm, norm_type = norm_type }):item()
    opt:step()
    opt:zero_grad()
  end
  local sd = m.unshard and SD.get_model_state_dict(m, { options = FULL }) or m:state_dict()
  return norms, sd
end

local function same(name, got_norms, got, want_norms, want, tol)
  local worst = 0
  for i = 1, #want_norms do worst = math.max(worst, math.abs(got_norms[i] - want_norms[i]) / want_norms[i]) end
  H.check(worst < tol, "%s: clip_grad_norm_'s total norms (worst relative difference %g)", name, worst)
  for k, v in pairs(want) do H.close(got[k], v, tol, "%s: %s", name, k) end
end

-- clip_grad_norm_: the norm over all ranks' chunks, then every chunk scaled by it
for _, p in ipairs({ 2.0, 1.0, math.huge }) do
  local want_norms, want = train(net(1), 0.5, p)
  local got_norms, got = train(shard_all(net(1)), 0.5, p)
  same("clip_grad_norm_ norm_type=" .. tostring(p), got_norms, got, want_norms, want, 1e-5)
  H.check(want_norms[1] > 0.5, "the gradients are clipped (norm %g)", want_norms[1])
end

-- printed as PyTorch's FSDP<Name> classes
do
  local m = shard_all(net(1))
  local text = tostring(m)
  H.check(text:match("^FSDPNet%(") and text:find("(0-2): 3 x FSDPLinear(in_features=7, out_features=7, bias=True)", 1, true)
    and text:find("(out): Linear(in_features=7", 1, true) and m:_get_name() == "FSDPNet", "the printed names:\n%s", text)
end

-- unshard() / reshard()
do
  local m = shard_all(net(2), { mp_policy = fsdp.MixedPrecisionPolicy { param_dtype = torch.float64 } })
  local chunk = m.inp.weight
  local rows = chunk:size(0)
  H.check(rows == math.max(0, math.min((7 + world - 1) // world, 7 - rank * ((7 + world - 1) // world))), "a chunk of dim 0 (%d rows)", rows)
  H.check(m:unshard() == nil, "unshard() returns nothing")
  H.check(m.inp.weight:size(0) == 7 and m.inp.weight:size(1) == 3 and nn.is_parameter(m.inp.weight), "unshard: the full parameter under its name")
  H.check(m.inp.weight.dtype == torch.float64, "unshard: in param_dtype")
  H.check(m.layers[0].weight:size(0) ~= 7 or world == 1, "unshard of the root leaves the blocks sharded")
  local full = SD.get_model_state_dict(m, { options = FULL })
  H.close(m.inp.weight, full["inp.weight"]:double(), 0, "unshard: the gathered values")
  m:reshard()
  H.check(rawequal(m.inp.weight, chunk), "reshard: the chunk is back")
  local handle = m.layers[1]:unshard(true)
  H.check(handle ~= nil and handle.wait ~= nil, "unshard(true) returns a handle with wait()")
  handle:wait()
  H.check(m.layers[1].weight:size(0) == 7, "unshard(true): full parameters")
  m.layers[1]:reshard()
  H.check(m.layers[1].weight:size(0) < 7, "reshard of a block")
  H.raises(function() m:unshard("yes") end, "async_op must be a boolean", "unshard's bad async_op")
  -- a forward after unshard() uses that gather and reshards after it
  local gathers, orig = 0, dist.all_gather_into_tensor
  dist.all_gather_into_tensor = function(...) gathers = gathers + 1; return orig(...) end
  m:unshard()
  local before = gathers
  m(X[0]):sum():backward()
  dist.all_gather_into_tensor = orig
  H.check(before == 1 and gathers == 1 + 3 + (world > 1 and 3 or 0), "the forward used the unshard's gather (%d then %d all-gathers)", before, gathers)
  H.check(rawequal(m.inp.weight, chunk), "after the forward the chunks are back")
  H.check(m.inp.weight.grad ~= nil and m.inp.weight.grad:size(0) == rows, "the chunk got its gradient")
end

-- unshard before each forward and prefetch lists train as without them
do
  local want_norms, want = train(shard_all(net(3)), 1.0, 2.0)
  local m = shard_all(net(3))
  local L = m.layers
  L[0]:set_modules_to_forward_prefetch({ L[1], L[2] })
  L[1]:set_modules_to_forward_prefetch({ L[2] })
  L[2]:set_modules_to_backward_prefetch({ L[1], L[0] })
  local got_norms, got = train(m, 1.0, 2.0, function(x) x:unshard() end)
  same("unshard + prefetch", got_norms, got, want_norms, want, 1e-6)
  -- layer 0's forward gathers layers 1 and 2: their own forwards gather nothing
  local gathers, orig = 0, dist.all_gather_into_tensor
  dist.all_gather_into_tensor = function(...) gathers = gathers + 1; return orig(...) end
  torch.no_grad(function() L[0](X[0]:narrow(1, 0, 1):expand(6, 7):contiguous()) end)
  local after0 = gathers
  torch.no_grad(function() L[2](L[1](torch.zeros(6, 7, { device = dev }))) end)
  dist.all_gather_into_tensor = orig
  H.check(after0 == 3 and gathers == 3, "forward prefetch: 3 all-gathers in layer 0's forward, none after (%d, %d)", after0, gathers)
  H.raises(function() L[0]:set_modules_to_forward_prefetch(L[1]) end, "expected a list of fully_shard-ed modules", "a module, not a list")
  H.raises(function() L[0]:set_modules_to_forward_prefetch({ nn.Linear(2, 2) }) end, "modules[1] is not a fully_shard-ed module", "an unsharded module")
  H.raises(function() L[0]:set_modules_to_backward_prefetch({ L[1], 3 }) end, "modules[2] is not a fully_shard-ed module", "not a module")
end

-- a 1-D sub-mesh: shard over mesh["dp"] of a (world/2, 2) mesh
if world % 2 == 0 then
  local mesh = dist.init_device_mesh(dev == "cpu" and "cpu" or "cuda", { world // 2, 2 }, { mesh_dim_names = { "dp", "tp" } })
  local dp = mesh["dp"]
  local want_norms, want = train(net(4), 0.5, 2.0)
  local m = shard_all(net(4), { mesh = dp })
  local size, r = dp:size(), dp:get_local_rank()
  local c = (7 + size - 1) // size
  H.check(m.inp.weight:size(0) == math.max(0, math.min(c, 7 - r * c)), "sub-mesh: chunks of the dp size %d (%d rows)", size, m.inp.weight:size(0))
  local got_norms = train(m, 0.5, 2.0)
  local got = {}
  for k, v in pairs(want) do got[k] = v end
  -- the full weights along dp: gather each chunk over the dp group
  for _, e in ipairs(m:named_parameters()) do
    local parts = {}
    dist.all_gather_object(parts, { e[2]:detach():tolist() })
    local rows = {}
    for i = 1, world do -- global rank i - 1 is in this rank's dp group when its tp coordinate, (i - 1) % 2, is ours
      if (i - 1) % 2 == rank % 2 then
        for _, row in ipairs(parts[i][1]) do rows[#rows + 1] = row end
      end
    end
    got[e[1]] = torch.tensor(rows)
  end
  same("sub-mesh", got_norms, got, want_norms, want, 1e-5)
  H.raises(function() fully_shard(net(5), { mesh = mesh }) end, "only a 1-D mesh is supported", "a 2-D mesh")
end

-- ShardedTensor takes a torch.Size as its global shape (as DTensor's from_local does)
do
  local st = dist.checkpoint.ShardedTensor(torch.ones(1, 3), torch.zeros(4, 3):size(), { 2, 0 })
  H.check(st:size(0) == 4 and st:size(1) == 3 and st.offsets[1] == 2, "ShardedTensor with a torch.Size")
end

dist.destroy_process_group()
H.report()
