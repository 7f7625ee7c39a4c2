-- FullyShardedDataParallel against one process training on the concatenated batches.
-- Run by test_dist.sh through the launcher with 2 and 3 ranks (gloo), or with "nccl" as
-- argument on GPUs.
local H = dofile(arg[0]:match("^(.*)/") .. "/harness.lua")
local dist = torch.distributed
local fsdp = dist.fsdp
local FSDP, SS, wrap = fsdp.FullyShardedDataParallel, fsdp.ShardingStrategy, fsdp.wrap

H.raises(function() FSDP(nn.Linear(2, 2)) end, "has not been initialized", "FSDP before init_process_group")
local _, dev = H.init(arg[1])
local rank, world = dist.get_rank(), dist.get_world_size()
local B, STEPS = 3, 4
H.check(dist.fsdp.FSDP == FSDP, "FSDP is FullyShardedDataParallel")

-- 275 parameters: uneven over 2 and 3 ranks
local function mlp(seed)
  torch.manual_seed(seed)
  return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 8), nn.Tanh(), nn.Linear(8, 3)):to(dev)
end

local Block = nn.Module:extend("Block")
function Block:__init()
  self.ln = nn.LayerNorm(8)
  self.fc1 = nn.Linear(8, 16)
  self.fc2 = nn.Linear(16, 8)
end
function Block:forward(x) return x + self.fc2(F.gelu(self.fc1(self.ln(x)))) end

local function stack(seed)
  torch.manual_seed(seed)
  return nn.Sequential(nn.Linear(6, 8), Block(), Block(), nn.Linear(8, 3)):to(dev)
end

torch.manual_seed(7) -- the same data on every rank; each trains on its slice
local X, Y = torch.randn(STEPS, B * world, 2, 6):to(dev), torch.randn(STEPS, B * world, 2, 3):to(dev)
local function slice(t, step) return t[step]:narrow(0, rank * B, B) end

local function sgd(params) return optim.SGD(params, { lr = 0.1, momentum = 0.9 }) end

local C = dofile(arg[0]:match("^(.*)/") .. "/fsdp_common.lua")(H, X, Y)
local reference = C.reference

local function full_state(model)
  local _ <close> = FSDP.state_dict_type(model, fsdp.StateDictType.FULL_STATE_DICT, fsdp.FullStateDictConfig())
  return model:state_dict()
end

local same_state = C.same_state

-- each unit keeps only its shard: ceil(numel / world) elements in storage of that size, the
-- original parameters gone from the modules
local function check_sharded(model, units_expected, total, strategy, what)
  local units = FSDP.fsdp_modules(model)
  H.check(#units == units_expected, "%s: %d units, expected %d", what, #units, units_expected)
  local params = model:parameters()
  local n, sum = 0, 0
  for _, u in ipairs(units) do
    local fp = u._fsdp_wrapped_module._flat_param
    if fp then
      n = n + 1
      local per = strategy == SS.NO_SHARD and u._total or (u._total + world - 1) // world
      sum = sum + u._total
      H.check(fp:numel() == per and fp:untyped_storage():nbytes() == per * fp:element_size(),
        "%s: a unit of %d parameters keeps %d elements (storage %d bytes), expected %d", what, u._total, fp:numel(),
        fp:untyped_storage():nbytes(), per)
      H.check(params[n] == fp, "%s: model:parameters() gives the flat shards in unit order", what)
    end
    for _, s in ipairs(u._slots) do
      H.check(s.module[s.name] == nil, "%s: %s is gone from its module between steps", what, s.name)
    end
  end
  H.check(#params == n and sum == total, "%s: %d flat parameters over %d elements, expected %d", what, #params, sum, total)
end

local cases = {
  { name = "MLP FULL_SHARD", make = mlp, units = 1 },
  { name = "MLP SHARD_GRAD_OP", make = mlp, strategy = SS.SHARD_GRAD_OP, units = 1 },
  { name = "MLP NO_SHARD", make = mlp, strategy = SS.NO_SHARD, units = 1 },
  { name = "MLP size-based auto-wrap", make = mlp, policy = wrap.size_based_auto_wrap_policy { min_num_params = 100 }, units = 3 },
  { name = "MLP size-based auto-wrap, SHARD_GRAD_OP, Adam", make = mlp, strategy = "SHARD_GRAD_OP",
    policy = wrap.size_based_auto_wrap_policy { min_num_params = 100 }, units = 3,
    opt = function(p) return optim.Adam(p, { lr = 0.01 }) end },
  { name = "stack transformer_auto_wrap_policy", make = stack, units = 3,
    policy = wrap.transformer_auto_wrap_policy { transformer_layer_cls = { Block } } },
  { name = "stack ModuleWrapPolicy(Linear), nested in blocks", make = stack, units = 7,
    policy = wrap.ModuleWrapPolicy({ nn.Linear }) },
  { name = "stack always_wrap_policy, sync_module_states", make = stack, units = 11, policy = wrap.always_wrap_policy,
    sync = true },
}

for _, case in ipairs(cases) do
  local seed = case.sync and 100 + rank or 100
  local net = case.make(seed)
  local total = 0
  for _, p in ipairs(net:parameters()) do total = total + p:numel() end
  local model = FSDP(net, { sharding_strategy = case.strategy, auto_wrap_policy = case.policy,
    sync_module_states = case.sync })
  check_sharded(model, case.units, total, case.strategy and SS[case.strategy] or case.strategy or SS.FULL_SHARD, case.name .. ", wrapped")
  local opt_fn = case.opt or sgd
  local opt = opt_fn(model:parameters())
  C.train(model, opt, slice, STEPS)
  check_sharded(model, case.units, total, case.strategy and SS[case.strategy] or case.strategy or SS.FULL_SHARD, case.name .. ", trained")
  same_state(full_state(model), reference(case.make, 100, opt_fn, STEPS), 2e-5, case.name)
end

-- named_parameters: the flat shards under names without _fsdp_wrapped_module
do
  local model = FSDP(mlp(1), { auto_wrap_policy = wrap.size_based_auto_wrap_policy { min_num_params = 100 } })
  local names = {}
  for _, e in ipairs(model:named_parameters()) do names[#names + 1] = e[1] end
  H.check(table.concat(names, ",") == "_flat_param,0._flat_param,2._flat_param", "named_parameters: %s", table.concat(names, ","))
end

-- FULL_SHARD frees the full parameters after forward and gathers them again for backward;
-- SHARD_GRAD_OP keeps them for backward (the all-gathers counted)
local gathers = 0
local all_gather_into_tensor = dist.all_gather_into_tensor
dist.all_gather_into_tensor = function(...) gathers = gathers + 1; return all_gather_into_tensor(...) end
for _, strategy in ipairs({ SS.FULL_SHARD, SS.SHARD_GRAD_OP }) do
  local net = mlp(3)
  local model = FSDP(net, { sharding_strategy = strategy })
  local seen, size = setmetatable({}, { __mode = "v" }), nil
  net[2]:register_forward_hook(function(m) seen.weight = m.weight; size = m.weight:size():totable() end)
  gathers = 0
  local loss = F.mse_loss(model(slice(X, 0)), slice(Y, 0))
  collectgarbage(); collectgarbage()
  H.check(size and size[1] == 8 and size[2] == 16, "%s: the module saw its full weight", tostring(strategy))
  H.check(gathers == 1, "%s: one all-gather in forward (%d)", tostring(strategy), gathers)
  if strategy == SS.FULL_SHARD then
    H.check(seen.weight == nil, "FULL_SHARD: the full parameters are freed after forward")
  end
  loss:backward()
  H.check(gathers == (strategy == SS.FULL_SHARD and 2 or 1), "%s: %d all-gathers in all", tostring(strategy), gathers)
  local ref = mlp(3)
  F.mse_loss(ref(X[0]), Y[0]):backward()
  local grads = {}
  for i, p in ipairs(ref:parameters()) do grads[i] = p.grad:reshape(-1) end
  local flat = torch.cat(grads, 0)
  local per = (flat:numel() + world - 1) // world
  flat = torch.cat({ flat, torch.zeros(per * world - flat:numel(), { device = dev }) }, 0)
  H.close(model:parameters()[1].grad, flat:narrow(0, rank * per, per), 1e-6, "%s: the shard's gradient is its slice of the averaged full gradient", tostring(strategy))
end
dist.all_gather_into_tensor = all_gather_into_tensor

-- the shard's slice of a reference's flat gradient (one unit over a whole mlp)
local function grad_slice(ref)
  local grads = {}
  for i, p in ipairs(ref:parameters()) do grads[i] = p.grad:reshape(-1) end
  local flat = torch.cat(grads, 0)
  local per = (flat:numel() + world - 1) // world
  flat = torch.cat({ flat, torch.zeros(per * world - flat:numel(), { device = dev }) }, 0)
  return flat:narrow(0, rank * per, per)
end

-- no_sync: two local backward passes, then a synced one reduces all three
do
  local model = FSDP(mlp(11))
  do
    local _ <close> = model:no_sync()
    F.mse_loss(model(slice(X, 0)), slice(Y, 0)):backward()
    H.check(model:parameters()[1].grad == nil, "inside no_sync the shard gets no gradient")
    F.mse_loss(model(slice(X, 1)), slice(Y, 1)):backward()
  end
  F.mse_loss(model(slice(X, 2)), slice(Y, 2)):backward()
  local ref = mlp(11)
  for step = 0, 2 do F.mse_loss(ref(X[step]), Y[step]):backward() end
  H.close(model:parameters()[1].grad, grad_slice(ref), 1e-5, "no_sync twice then a synced backward averages all three")

  -- clip_grad_norm_: the norm over every shard, as one process's clip_grad_norm_
  local norm = model:clip_grad_norm_(0.5)
  local want = nn.utils.clip_grad_norm_(ref:parameters(), 0.5)
  H.close(norm, want:to("cpu"), 1e-4, "clip_grad_norm_: the total norm over all shards")
  H.close(model:parameters()[1].grad, grad_slice(ref), 1e-5, "clip_grad_norm_: the shards scaled as the full gradients")
  local n2 = model:clip_grad_norm_(100, "inf")
  local m = 0
  for _, p in ipairs(ref:parameters()) do m = math.max(m, p.grad:abs():max():item()) end
  H.close(n2, torch.tensor(m), 1e-6, "clip_grad_norm_ with the inf norm")
end

-- mixed precision: the wrapped module runs in param_dtype (inputs cast at the root), the
-- gradients come back to the shards in their dtype; float64 compute matches the float32 run closely
for _, dt in ipairs({ torch.float64, torch.bfloat16 }) do
  local net = mlp(5)
  local model = FSDP(net, { mixed_precision = fsdp.MixedPrecision { param_dtype = dt, reduce_dtype = torch.float32 },
    auto_wrap_policy = wrap.size_based_auto_wrap_policy { min_num_params = 100 } })
  local seen = {}
  net[4]:register_forward_hook(function(m, input, out) seen.w, seen.x, seen.y = m.weight.dtype, input[1].dtype, out.dtype end)
  local opt = sgd(model:parameters())
  C.train(model, opt, slice, STEPS)
  H.check(seen.w == dt and seen.x == dt and seen.y == dt, "MixedPrecision(%s): weight %s, input %s, output %s", tostring(dt),
    tostring(seen.w), tostring(seen.x), tostring(seen.y))
  H.check(model:parameters()[1].dtype == torch.float32 and model:parameters()[1].grad.dtype == torch.float32,
    "MixedPrecision: the shards and their gradients stay float32")
  local sd = full_state(model)
  H.check(sd["0.weight"].dtype == torch.float32, "MixedPrecision: the full state dict is in the parameters' dtype")
  same_state(sd, reference(mlp, 5, sgd, STEPS), dt == torch.float64 and 2e-5 or 0.05, "MixedPrecision(" .. tostring(dt) .. ")")
end

-- buffer_dtype: buffers run in it, the state dict has them in their own dtype
do
  torch.manual_seed(4)
  local net = nn.Sequential(nn.Linear(6, 4), nn.BatchNorm1d(4)):to(dev)
  local model = FSDP(net, { mixed_precision = fsdp.MixedPrecision { param_dtype = torch.float64, buffer_dtype = torch.float64 } })
  H.check(net[1].running_mean.dtype == torch.float64, "MixedPrecision(buffer_dtype): buffers cast")
  model(slice(X, 0):reshape(-1, 6))
  local sd = full_state(model)
  H.check(sd["1.running_mean"].dtype == torch.float32, "buffer_dtype: the state dict's buffers are float32 (%s)", tostring(sd["1.running_mean"].dtype))
  H.check(sd["1.num_batches_tracked"] ~= nil and sd["1.num_batches_tracked"]:item() == 1, "buffers are in the state dict")
end

-- state dicts: a full round trip into another wrapped model, rank0_only, offload_to_cpu
do
  local pol = wrap.transformer_auto_wrap_policy { transformer_layer_cls = { Block } }
  local a = FSDP(stack(21), { auto_wrap_policy = pol })
  local b = FSDP(stack(22), { auto_wrap_policy = pol })
  local sd = full_state(a)
  same_state(sd, stack(21), 0, "a fresh wrapped model's full state dict")
  local r = b:load_state_dict(sd)
  H.check(#r.missing_keys == 0 and #r.unexpected_keys == 0, "load_state_dict: no missing or unexpected keys")
  same_state(full_state(b), stack(21), 0, "load_state_dict of a full state dict")
  local _ <close> = torch.no_grad()
  H.close(b(X[0]), stack(21)(X[0]), 1e-6, "the loaded model computes as the unwrapped one")
  do
    local _ <close> = FSDP.state_dict_type(a, fsdp.StateDictType.FULL_STATE_DICT,
      fsdp.FullStateDictConfig { offload_to_cpu = true, rank0_only = true })
    local s0 = a:state_dict()
    if rank == 0 then
      H.check(#s0:keys() == #sd:keys() and s0["0.weight"].device.type == "cpu", "rank0_only: rank 0 gets it, on the CPU")
    else
      H.check(#s0:keys() == 0, "rank0_only: the other ranks get an empty state dict")
    end
  end
  H.check(a._state_dict_config.rank0_only == false, "state_dict_type's scope restores the config")
  H.raises(function() b:load_state_dict({ ["nope"] = torch.zeros(1) }) end, "nope", "load_state_dict of an unknown key")
end

-- optimizer state dicts: each flat shard's state gathered and cut into the original parameters
do
  local pol = wrap.size_based_auto_wrap_policy { min_num_params = 100 }
  local adam = function(p) return optim.Adam(p, { lr = 0.01 }) end
  local model = FSDP(mlp(31), { auto_wrap_policy = pol })
  local opt = adam(model:parameters())
  C.train(model, opt, slice, STEPS)
  local ropt_state = {}
  local ref = mlp(31) -- one process on the whole batches, its optimizer kept
  local ropt = adam(ref:parameters())
  C.train(ref, ropt, function(t, step) return t[step] end, STEPS)
  for _, e in ipairs(ref:named_parameters()) do ropt_state[e[1]] = ropt.state[e[2]] end
  local osd = FSDP.optim_state_dict(model, opt)
  local worst, n = 0, 0
  for name, want in pairs(ropt_state) do
    local got = osd.state[name]
    n = n + 1
    for _, k in ipairs({ "exp_avg", "exp_avg_sq" }) do
      local d = got and H.maxdiff(got[k], want[k])
      worst = d and math.max(worst, d) or math.huge
    end
    H.check(got and got.step:item() == STEPS, "optim_state_dict: %s's step", name)
  end
  H.check(n == 6 and worst < 1e-5, "optim_state_dict: Adam's moments per original parameter (%d, off by %s)", n, tostring(worst))
  local names = osd.param_groups[1].params
  H.check(#names == 6 and names[1] == "4.weight" and names[3] == "0.weight", "optim_state_dict: param_groups name the parameters in flat order (%s)", table.concat(names, ","))
  H.check(osd.param_groups[1].lr == 0.01, "optim_state_dict: the group's options")

  -- round trip: a fresh model and optimizer take the state and continue as the first
  local model2 = FSDP(mlp(32), { auto_wrap_policy = pol })
  model2:load_state_dict(full_state(model))
  local opt2 = adam(model2:parameters())
  opt2:load_state_dict(FSDP.optim_state_dict_to_load(model2, opt2, osd))
  for _, m in ipairs({ { model, opt }, { model2, opt2 } }) do
    m[2]:zero_grad()
    F.mse_loss(m[1](slice(X, 0)), slice(Y, 0)):backward()
    m[2]:step()
  end
  same_state(full_state(model2), mlp(31):to(dev), math.huge, "keys after the round trip")
  local a, b = full_state(model), full_state(model2)
  local d = 0
  for k, t in pairs(a) do d = math.max(d, H.maxdiff(t, b[k])) end
  H.check(d < 1e-6, "optim_state_dict_to_load: the restored run continues as the first (off by %g)", d)
  H.raises(function() FSDP.optim_state_dict(model, adam(mlp(1):parameters())) end, "not one of the model's flat shards", "an optimizer of another model")
end

-- summon_full_params: the original names hold the full parameters; writeback
do
  local net = mlp(9)
  local model = FSDP(net)
  do
    local _ <close> = FSDP.summon_full_params(model)
    H.check(nn.is_parameter(net[0].weight) and net[0].weight.shape[0] == 16 and net[0].weight.shape[1] == 6,
      "summon_full_params: the full weight under its name")
    H.close(net[4].bias, mlp(9)[4].bias, 0, "summon_full_params: the full values")
    torch.no_grad(function() net[4].bias:fill_(2) end)
  end
  H.check(net[0].weight == nil, "after summon_full_params the module is sharded again")
  H.close(full_state(model)["4.bias"], torch.full({ 3 }, 2.0), 0, "summon_full_params writes back")
  do
    local _ <close> = FSDP.summon_full_params(model, { writeback = false })
    torch.no_grad(function() net[4].bias:fill_(5) end)
  end
  H.close(full_state(model)["4.bias"], torch.full({ 3 }, 2.0), 0, "summon_full_params(writeback=false) leaves the shards")
end

-- errors
do
  H.raises(function() FSDP(mlp(1), { sharding_strategy = SS.HYBRID_SHARD }) end, "HYBRID_SHARD is not supported", "HYBRID_SHARD")
  H.raises(function() FSDP(mlp(1), { sharding_strategy = "HALF" }) end, "sharding_strategy must be a ShardingStrategy", "a bad strategy")
  H.raises(function() FSDP(mlp(1), { shard_strategy = SS.FULL_SHARD }) end, "unknown keyword 'shard_strategy'", "an unknown keyword")
  H.raises(function() FSDP(torch.zeros(2)) end, "module must be an nn.Module", "not a module")
  H.raises(function() FSDP(mlp(1), { use_orig_params = true }) end, "use_orig_params=True is not supported", "use_orig_params")
  H.raises(function() FSDP(mlp(1), { cpu_offload = fsdp.CPUOffload { offload_params = true } }) end, "offload_params=True) is not supported", "CPU offload")
  H.raises(function() FSDP(mlp(1), { mixed_precision = { param_dtype = torch.float16 } }) end, "mixed_precision must be a MixedPrecision", "a plain table as MixedPrecision")
  H.raises(function() FSDP(FSDP(mlp(1))) end, "already wrapped", "wrapping twice")
  local mixed = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2):double()):to(dev)
  H.raises(function() FSDP(mixed) end, "must have one dtype", "parameters of two dtypes in one unit")
  local frozen = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2)):to(dev)
  frozen[0]:requires_grad_(false)
  H.raises(function() FSDP(frozen) end, "uniform requires_grad", "frozen and trainable parameters in one unit")
  local ok = pcall(FSDP, frozen, { auto_wrap_policy = wrap.ModuleWrapPolicy({ nn.Linear }) })
  H.check(ok, "frozen parameters in their own unit are fine")
  local m = FSDP(mlp(1))
  H.raises(function() FSDP.state_dict_type(m, fsdp.StateDictType.SHARDED_STATE_DICT) end, "SHARDED_STATE_DICT is not supported", "sharded state dicts")
  H.raises(function() wrap.size_based_auto_wrap_policy { min_params = 3 } end, "unknown keyword 'min_params'", "a bad policy keyword")
  H.raises(function() FSDP(mlp(1), { auto_wrap_policy = 3 }) end, "auto_wrap_policy must be", "a bad policy")
  H.check(tostring(fsdp.MixedPrecision { param_dtype = torch.float16 }):find("MixedPrecision(param_dtype=torch.float16", 1, true) == 1,
    "MixedPrecision prints as PyTorch's dataclass")
  H.check(tostring(SS.FULL_SHARD) == "ShardingStrategy.FULL_SHARD", "ShardingStrategy prints its name")
  local p = FSDP(mlp(1), { backward_prefetch = fsdp.BackwardPrefetch.BACKWARD_PRE, forward_prefetch = true, limit_all_gathers = false })
  H.check(p ~= nil, "prefetch options are accepted (they change nothing: collectives are synchronous)")
end

dist.destroy_process_group()
H.report()
