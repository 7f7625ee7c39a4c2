-- torch.distributed.checkpoint.state_dict for plain, DistributedDataParallel, FSDP and
-- fully_shard-ed models: get_state_dict / set_state_dict and their model / optimizer halves.
-- Keys are the unwrapped model's names (no "module." of DDP); an optimizer's state is keyed by
-- parameter name: { state = { ["fc.weight"] = { exp_avg = ... } }, param_groups = { { lr = ...,
-- params = { "fc.weight", ... } } } }. For a fully_shard-ed model the default
-- (full_state_dict=false) holds each rank's chunks as ShardedTensors with their global offsets,
-- which dcp.save writes without gathering; full_state_dict=true gathers full tensors.
-- The full model state dict of fully_shard-ed models is torch_distributed_fsdp2.lua's.
-- (named to load after the fsdp files it builds on)
local torch = require "torch"
local U = require "nn_util"
local dcp = require "torch_distributed_checkpoint"
local dist = torch.distributed
local fsdp = dist.fsdp
local FSDP = fsdp.FullyShardedDataParallel
local DDP = torch.nn.parallel.DistributedDataParallel
local sd_mod = dcp.state_dict
local full_get, full_set = sd_mod.get_model_state_dict, sd_mod.set_model_state_dict

local SDO_MT = getmetatable(sd_mod.StateDictOptions())

local function options(fn, o, loading)
  o = o or sd_mod.StateDictOptions()
  if getmetatable(o) ~= SDO_MT then U.errorf("%s: options must be a StateDictOptions, got %s", fn, U.typename(o)) end
  if o.broadcast_from_rank0 and not loading then U.errorf("%s: broadcast_from_rank0=true is for set_model_state_dict / set_optimizer_state_dict", fn) end
  if o.broadcast_from_rank0 and not o.full_state_dict then
    U.errorf("%s: broadcast_from_rank0=true needs full_state_dict=true", fn)
  end
  if o.flatten_optimizer_state_dict then U.errorf("%s: flatten_optimizer_state_dict=true is not supported", fn) end
  return o
end

-- broadcast_from_rank0: rank 0's state dict (nested tables of tensors and plain values) on
-- every rank; the other ranks' are not read (they may pass {}). The layout goes as one object,
-- then each tensor, in the order rank 0 numbered them, onto this rank's device.
local function from_rank0(sd)
  local rank0, tensors, metas = dist.get_rank() == 0, {}, {}
  local function strip(x)
    if torch.is_tensor(x) then
      tensors[#tensors + 1] = x
      return { __tensor = #tensors, shape = x:size():totable(), dtype = tostring(x.dtype):gsub("^torch%.", "") }
    end
    if type(x) ~= "table" then return x end
    local out = {}
    for k, v in pairs(x) do out[k] = strip(v) end
    return out
  end
  local box = { rank0 and strip(sd) or false }
  dist.broadcast_object_list(box, 0)
  local function find(x) -- every tensor's shape and dtype by its number
    if type(x) ~= "table" then return end
    if x.__tensor then metas[x.__tensor] = x; return end
    for _, v in pairs(x) do find(v) end
  end
  find(box[1])
  local dev = dist._device()
  for i = 1, #metas do
    local t = rank0 and tensors[i]:to(dev):contiguous():clone()
      or torch.empty(metas[i].shape, { dtype = torch[metas[i].dtype], device = dev })
    dist.broadcast(t, 0)
    tensors[i] = t
  end
  local function build(x)
    if type(x) ~= "table" then return x end
    if x.__tensor then return tensors[x.__tensor] end
    local out = {}
    for k, v in pairs(x) do out[k] = build(v) end
    return out
  end
  return build(box[1])
end

-- the same options with full_state_dict=true (what torch_distributed_fsdp2.lua's functions take)
local function as_full(o)
  return sd_mod.StateDictOptions { full_state_dict = true, cpu_offload = o.cpu_offload, ignore_frozen_params = o.ignore_frozen_params,
    keep_submodule_prefixes = o.keep_submodule_prefixes, strict = o.strict }
end

local function is_a(m, cls) return type(m) == "table" and m.isinstance and m:isinstance(cls) end
local function unwrap(model) return is_a(model, DDP) and model.module or model end

-- fully_shard-ed chunks: parameter -> { shape = global shape, offsets }
local function chunks_of(model)
  local out = {}
  for _, st in ipairs(fsdp._fsdp2_states_in(model)) do
    for i, p in ipairs(st.locals) do
      local offsets = { math.min(st.rank * st.chunk[i], st.rows[i]) }
      for d = 2, #st.shapes[i] do offsets[d] = 0 end
      out[p] = { shape = st.shapes[i], offsets = offsets }
    end
  end
  return out
end

local function offload(t, o) return o.cpu_offload and t:to("cpu") or t end

local function check_model(fn, model, submodules)
  if not (type(model) == "table" and model.state_dict) then U.errorf("%s: model must be an nn.Module, got %s", fn, U.typename(model)) end
  if submodules ~= nil then U.errorf("%s: submodules is not supported", fn) end
end

function sd_mod.get_model_state_dict(model, ...)
  local o = U.parse("get_model_state_dict", { { "submodules" }, { "options" } }, ...)
  check_model("get_model_state_dict", model, o.submodules)
  local opt = options("get_model_state_dict", o.options)
  local m = unwrap(model)
  if is_a(m, FSDP) then
    if not opt.full_state_dict then
      U.error("get_model_state_dict: FullyShardedDataParallel models give full state dicts only (StateDictOptions{full_state_dict=true}); fully_shard gives sharded ones")
    end
    local out = U.OrderedDict.new()
    for k, t in pairs(m:state_dict()) do out[k] = offload(t, opt) end
    return out
  end
  local chunks = chunks_of(m)
  if opt.full_state_dict or next(chunks) == nil then return full_get(m, { options = as_full(opt) }) end
  local frozen = {}
  for _, p in ipairs(m:parameters()) do frozen[p] = not p.requires_grad end
  local out = U.OrderedDict.new()
  for k, t in pairs(m:state_dict({ keep_vars = true })) do
    if not (opt.ignore_frozen_params and frozen[t]) then
      local c = chunks[t]
      local v = offload(t:detach(), opt)
      out[k] = c and dcp.ShardedTensor(v, c.shape, c.offsets) or v
    end
  end
  return out
end

function sd_mod.set_model_state_dict(model, model_state_dict, ...)
  local o = U.parse("set_model_state_dict", { { "options" } }, ...)
  check_model("set_model_state_dict", model, nil)
  local opt = options("set_model_state_dict", o.options, true)
  if opt.broadcast_from_rank0 then model_state_dict = from_rank0(model_state_dict) end
  local m = unwrap(model)
  if is_a(m, FSDP) then return m:load_state_dict(model_state_dict, { strict = opt.strict }) end
  local sharded, plain = false, U.OrderedDict.new()
  for k, v in pairs(model_state_dict) do
    if dcp._is_sharded(v) then sharded, v = true, v:to_local() end
    plain[k] = v
  end
  if sharded then return m:load_state_dict(plain, { strict = opt.strict }) end
  return full_set(m, plain, { options = as_full(opt) })
end

-- ---- optimizers ----

local function optimizer_list(fn, optimizers)
  local list = (type(optimizers) == "table" and optimizers.param_groups) and { optimizers } or optimizers
  if type(list) ~= "table" or #list == 0 then U.errorf("%s: optimizers must be an optimizer or a list of them, got %s", fn, U.typename(optimizers)) end
  for _, opt in ipairs(list) do
    if type(opt) ~= "table" or type(opt.param_groups) ~= "table" then U.errorf("%s: expected an optimizer, got %s", fn, U.typename(opt)) end
  end
  return list
end

local function names_of(m)
  local names = {}
  for _, e in ipairs(m:named_parameters()) do if names[e[2]] == nil then names[e[2]] = e[1] end end
  return names
end

-- an optimizer without state gets it from one step of zero gradients at lr 0 (as PyTorch does,
-- so that a fresh optimizer's state dict has every entry a load fills)
local function init_state(opt)
  if next(opt.state) ~= nil then return end
  local lrs = {}
  for i, g in ipairs(opt.param_groups) do
    lrs[i] = g.lr
    if g.lr ~= nil then g.lr = 0.0 end
    for _, p in ipairs(g.params) do
      if p.requires_grad and p.grad == nil then p.grad = torch.zeros_like(p) end
    end
  end
  opt:step()
  for i, g in ipairs(opt.param_groups) do g.lr = lrs[i] end
  opt:zero_grad(true)
end

local function sorted_keys(t)
  local ks = {}
  for k in pairs(t) do ks[#ks + 1] = k end
  table.sort(ks, function(a, b) return tostring(a) < tostring(b) end) -- the same collectives in the same order on every rank
  return ks
end

local group_copy = FSDP._group_with -- a group's options with params replaced

-- a per-element state of a chunk (exp_avg, momentum_buffer; not step)
local function per_element(k, v, p)
  return k ~= "step" and torch.is_tensor(v) and v:dim() == p:dim() and table.concat(v:size():totable(), ",") == table.concat(p:size():totable(), ",")
end

function sd_mod.get_optimizer_state_dict(model, optimizers, ...)
  local o = U.parse("get_optimizer_state_dict", { { "submodules" }, { "options" } }, ...)
  check_model("get_optimizer_state_dict", model, o.submodules)
  local opt = options("get_optimizer_state_dict", o.options)
  local list = optimizer_list("get_optimizer_state_dict", optimizers)
  local m = unwrap(model)
  local out = { state = {}, param_groups = {} }
  for _, optim in ipairs(list) do
    if is_a(m, FSDP) then
      if not opt.full_state_dict then
        U.error("get_optimizer_state_dict: FullyShardedDataParallel models give full state dicts only (StateDictOptions{full_state_dict=true})")
      end
      init_state(optim)
      local osd = FSDP.optim_state_dict(m, optim)
      for k, s in pairs(osd.state) do
        for name, v in pairs(s) do if torch.is_tensor(v) then s[name] = offload(v, opt) end end
        out.state[k] = s
      end
      for _, g in ipairs(osd.param_groups) do out.param_groups[#out.param_groups + 1] = g end
    else
      init_state(optim)
      local names, chunks = names_of(m), chunks_of(m)
      for _, g in ipairs(optim.param_groups) do
        local fqns = {}
        for i, p in ipairs(g.params) do
          local name = names[p]
          if not name then U.error("get_optimizer_state_dict: the optimizer holds a parameter that is not one of the model's") end
          fqns[i] = name
          local s, c = optim.state[p], chunks[p]
          if s then
            local entry = {}
            for _, k in ipairs(sorted_keys(s)) do
              local v = s[k]
              if c and per_element(k, v, p) then
                local st = dcp.ShardedTensor(v:detach(), c.shape, c.offsets)
                v = opt.full_state_dict and st:full_tensor() or dcp.ShardedTensor(offload(v:detach(), opt), c.shape, c.offsets)
                if opt.full_state_dict then v = offload(v, opt) end
              elseif torch.is_tensor(v) then v = offload(v:detach(), opt) end
              entry[k] = v
            end
            out.state[name] = entry
          end
        end
        out.param_groups[#out.param_groups + 1] = group_copy(g, fqns)
      end
    end
  end
  return out
end

-- the saved group holding name
local function group_of(fn, osd, name)
  for _, g in ipairs(osd.param_groups) do
    for _, n in ipairs(g.params or {}) do if n == name then return g end end
  end
  U.errorf("%s: no parameter group of the optimizer state dict holds '%s'", fn, name)
end

function sd_mod.set_optimizer_state_dict(model, optimizers, optim_state_dict, ...)
  local fn = "set_optimizer_state_dict"
  local o = U.parse(fn, { { "options" } }, ...)
  check_model(fn, model, nil)
  local opt = options(fn, o.options, true)
  local list = optimizer_list(fn, optimizers)
  local osd = optim_state_dict
  if opt.broadcast_from_rank0 then osd = from_rank0(osd) end
  if type(osd) ~= "table" or type(osd.state) ~= "table" or type(osd.param_groups) ~= "table" then
    U.errorf("%s: expected a table with 'state' and 'param_groups' (from get_optimizer_state_dict)", fn)
  end
  local m = unwrap(model)
  for _, optim in ipairs(list) do
    if is_a(m, FSDP) then
      optim:load_state_dict(FSDP.optim_state_dict_to_load(m, optim, osd))
    else
      local names, chunks = names_of(m), chunks_of(m)
      local state, groups, id = {}, {}, 0
      for gi, g in ipairs(optim.param_groups) do
        local ids = {}
        for _, p in ipairs(g.params) do
          local name = names[p] or U.errorf("%s: the optimizer holds a parameter that is not one of the model's", fn)
          local s, c = osd.state[name], chunks[p]
          if s then
            local entry = {}
            for k, v in pairs(s) do
              if dcp._is_sharded(v) then v = v:to_local()
              elseif c and k ~= "step" and torch.is_tensor(v) and v:dim() > 0 and v:size(0) == c.shape[1] and v:size(0) ~= p:size(0) then
                v = v:narrow(0, c.offsets[1], p:size(0)) -- a full state: this rank's rows
              end
              entry[k] = v
            end
            state[id] = entry
          end
          ids[#ids + 1] = id
          id = id + 1
        end
        groups[gi] = group_copy(group_of(fn, osd, names[g.params[1]]), ids)
      end
      optim:load_state_dict({ state = state, param_groups = groups })
    end
  end
end

function sd_mod.get_state_dict(model, optimizers, ...)
  local o = U.parse("get_state_dict", { { "submodules" }, { "options" } }, ...)
  return sd_mod.get_model_state_dict(model, { submodules = o.submodules, options = o.options }),
    sd_mod.get_optimizer_state_dict(model, optimizers, { submodules = o.submodules, options = o.options })
end

function sd_mod.set_state_dict(model, optimizers, ...)
  local o = U.parse("set_state_dict", { { "model_state_dict", U.REQUIRED }, { "optim_state_dict", U.REQUIRED }, { "options" } }, ...)
  local r = sd_mod.set_model_state_dict(model, o.model_state_dict, { options = o.options })
  sd_mod.set_optimizer_state_dict(model, optimizers, o.optim_state_dict, { options = o.options })
  return r
end

return sd_mod
