-- FullyShardedDataParallel's optimizer state dicts (FULL_STATE_DICT): FSDP.optim_state_dict
-- gathers the state of each flat shard (exp_avg, momentum_buffer, ...) and cuts it into the
-- original parameters, keyed by their names as the unwrapped model has them;
-- FSDP.optim_state_dict_to_load turns such a dict back into one for this rank's optimizer.
--   local osd = FSDP.optim_state_dict(model, opt)                       -- every rank
--   opt:load_state_dict(FSDP.optim_state_dict_to_load(model, opt, osd))
local torch = require "torch"
local U = require "nn_util"
local dist = torch.distributed
local FSDP = dist.fsdp.FullyShardedDataParallel

-- each unit's flat shard -> {unit, fqns (one per original parameter, in flat order)}
local function flat_info(model)
  local prefix = {}
  for _, e in ipairs(model:named_modules()) do prefix[e[2]] = e[1] end
  local info = {}
  for _, u in ipairs(FSDP.fsdp_modules(model)) do
    if u._flat_param then
      local fqns = {}
      for _, s in ipairs(u._slots) do
        if not fqns[s.index] then
          local p = prefix[s.module]
          fqns[s.index] = ((p == "" or p == nil) and s.name or (p .. "." .. s.name)):gsub("_fsdp_wrapped_module%.", "")
        end
      end
      info[u._flat_param] = { unit = u, fqns = fqns }
    end
  end
  return info
end

local function check(model, optim, fn)
  if not (type(model) == "table" and model.isinstance and model:isinstance(FSDP)) then
    U.errorf("%s: model must be the root FullyShardedDataParallel module, got %s", fn, U.typename(model))
  end
  if type(optim) ~= "table" or type(optim.param_groups) ~= "table" then
    U.errorf("%s: optim must be an optimizer built on model:parameters(), got %s", fn, U.typename(optim))
  end
end

-- is v a per-element state of a shard of n elements (not the step count)
local function per_element(k, v, n)
  return torch.is_tensor(v) and k ~= "step" and v:dim() == 1 and v:numel() == n
end

-- a parameter group's options with params replaced
local function group_with(g, params)
  local packed = {}
  for k, v in pairs(g) do if k ~= "params" then packed[k] = v end end
  packed.params = params
  return packed
end
FSDP._group_with = group_with -- torch.distributed.checkpoint.state_dict's too

function FSDP.optim_state_dict(model, optim, optim_state_dict)
  check(model, optim, "optim_state_dict")
  if optim_state_dict ~= nil then U.error("optim_state_dict: pass the optimizer; its state dict is read from it") end
  local info = flat_info(model)
  local state, groups = {}, {}
  for gi, g in ipairs(optim.param_groups) do
    local names = {}
    for _, p in ipairs(g.params) do
      local f = info[p]
      if not f then U.error("optim_state_dict: the optimizer holds a parameter that is not one of the model's flat shards") end
      local u = f.unit
      local s = optim.state[p]
      local gathered, keys = {}, {}
      for k in pairs(s or {}) do keys[#keys + 1] = k end
      table.sort(keys, function(a, b) return tostring(a) < tostring(b) end) -- the same collectives in the same order on every rank
      for _, k in ipairs(keys) do
        local v = s[k]
        if per_element(k, v, u._shard_numel) then
          local full = torch.empty(u._padded_numel, { dtype = v.dtype, device = v.device })
          if u._shards == 1 then full:copy_(v) else dist.all_gather_into_tensor(full, v:detach():contiguous()) end
          gathered[k] = full
        end
      end
      for i, name in ipairs(f.fqns) do
        names[#names + 1] = name
        if s then
          local entry = {}
          for k, v in pairs(s) do
            if gathered[k] then entry[k] = gathered[k]:narrow(0, u._offsets[i], u._numels[i]):view(u._shapes[i]):clone()
            elseif torch.is_tensor(v) then entry[k] = v:clone()
            else entry[k] = v end
          end
          state[name] = entry
        end
      end
    end
    groups[gi] = group_with(g, names)
  end
  return { state = state, param_groups = groups }
end

-- the state dict optim:load_state_dict takes on this rank, from optim_state_dict's
function FSDP.optim_state_dict_to_load(model, optim, optim_state_dict)
  check(model, optim, "optim_state_dict_to_load")
  local osd = optim_state_dict
  if type(osd) ~= "table" or type(osd.state) ~= "table" or type(osd.param_groups) ~= "table" then
    U.error("optim_state_dict_to_load: expected a table with 'state' and 'param_groups' (from FSDP.optim_state_dict)")
  end
  local info = flat_info(model)
  local state, groups, id = {}, {}, 0
  for gi, g in ipairs(optim.param_groups) do
    local ids = {}
    for _, p in ipairs(g.params) do
      local f = info[p]
      if not f then U.error("optim_state_dict_to_load: the optimizer holds a parameter that is not one of the model's flat shards") end
      local u = f.unit
      local first = osd.state[f.fqns[1]]
      if first then
        local entry = {}
        for k, v in pairs(first) do
          if torch.is_tensor(v) and k ~= "step" then
            local parts = {}
            for i, name in ipairs(f.fqns) do
              local x = osd.state[name] and osd.state[name][k]
              if not x then U.errorf("optim_state_dict_to_load: no '%s' state for %s", k, name) end
              parts[i] = x:to(p.device):reshape(-1)
            end
            if u._padded_numel > u._total then
              parts[#parts + 1] = torch.zeros(u._padded_numel - u._total, { dtype = parts[1].dtype, device = p.device })
            end
            local mine = u._shards == 1 and 0 or u.rank
            entry[k] = torch.cat(parts, 0):narrow(0, mine * u._shard_numel, u._shard_numel):clone()
          else
            entry[k] = torch.is_tensor(v) and v:clone() or v
          end
        end
        state[id] = entry
      end
      ids[#ids + 1] = id
      id = id + 1
    end
    local saved = osd.param_groups[gi]
    if not saved then U.error("optim_state_dict_to_load: the state dict has fewer parameter groups than the optimizer") end
    groups[gi] = group_with(saved, ids)
  end
  return { state = state, param_groups = groups }
end

return FSDP
