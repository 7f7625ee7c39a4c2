-- pytorch/examples distributed/FSDP2/checkpoint.py in Lua: saves and loads full (unsharded)
-- state dicts of a fully_shard-ed model and its optimizer, under
-- <folder>/{dcp_api|dtensor_api}/<milliseconds>/{model,optim}_state_dict.pt, and resumes from
-- the newest such folder.
-- - dcp_api: torch.distributed.checkpoint.state_dict's get/set_model_state_dict and
--   get/set_optimizer_state_dict with full_state_dict=true.
-- - otherwise (the original's "DTensor API"): nnrepl has no DTensor, so the sharded state dicts
--   of torch.distributed.checkpoint.state_dict stand in for it: their ShardedTensors have
--   full_tensor() as DTensor does, and distribute_like() below is distribute_tensor(full, mesh,
--   Shard(0)). The optimizer's state dict is keyed by parameter name there (the original's by
--   index), and rank 0 writes it the same way.
local dist = torch.distributed
local dcp = dist.checkpoint
local SD = dcp.state_dict

local MODEL_CHECKPOINT = "model_state_dict.pt"
local OPTIM_CHECKPOINT = "optim_state_dict.pt"
local PARAMS = "params"

-- the largest number among path's sub-folder names, or nil
local function get_latest_checkpoint_folder(path)
  local max_num
  local ls = io.popen("ls -1p '" .. path .. "' 2>/dev/null")
  for name in ls:lines() do
    local num = name:match("^(%d+)/$") -- folders only; other names are skipped
    if num and (max_num == nil or tonumber(num) > max_num) then max_num = tonumber(num) end
  end
  ls:close()
  return max_num
end

-- full's rows that the sharded tensor like holds, as a ShardedTensor (DTensor's distribute_tensor)
local function distribute_like(full, like)
  local rows = like:to_local():size(0)
  local mine = full:to(like.device):narrow(0, like.offsets[1], rows):clone()
  return dcp.ShardedTensor(mine, full:size(), like.offsets)
end

local Checkpointer = {}
Checkpointer.__index = Checkpointer

local function new(folder, dcp_api)
  local self = setmetatable({ folder = folder, dcp_api = dcp_api }, Checkpointer)
  self.last_training_time = get_latest_checkpoint_folder(folder .. "/" .. (dcp_api and "dcp_api" or "dtensor_api"))
  return self
end

function Checkpointer:is_empty() return self.last_training_time == nil end

function Checkpointer:_path(file)
  return string.format("%s/%s/%d/%s", self.folder, self.dcp_api and "dcp_api" or "dtensor_api", self.last_training_time, file)
end

function Checkpointer:load_model(model)
  local full_sd = torch.load(self:_path(MODEL_CHECKPOINT), { map_location = "cpu" })
  if self.dcp_api then
    SD.set_model_state_dict(model, full_sd, {
      options = SD.StateDictOptions { full_state_dict = true, broadcast_from_rank0 = true } })
    return
  end
  local meta_sharded_sd = SD.get_model_state_dict(model)
  local sharded_sd = {}
  for param_name, full_tensor in pairs(full_sd) do
    local sharded_meta_param = meta_sharded_sd[param_name]
    sharded_sd[param_name] = distribute_like(full_tensor, sharded_meta_param)
  end
  SD.set_model_state_dict(model, sharded_sd, { options = SD.StateDictOptions { strict = false } })
end

function Checkpointer:load_optim(model, opt)
  local full_sd = torch.load(self:_path(OPTIM_CHECKPOINT), { map_location = "cpu" })
  if self.dcp_api then
    SD.set_optimizer_state_dict(model, opt, full_sd, {
      options = SD.StateDictOptions { full_state_dict = true, broadcast_from_rank0 = true } })
    return
  end
  local sharded_sd = SD.get_optimizer_state_dict(model, opt) -- gives a fresh optimizer its state first
  local param_groups, state = sharded_sd.param_groups, sharded_sd.state
  local full_param_groups, full_state = full_sd.param_groups, full_sd.state

  for i, param_group in ipairs(param_groups) do
    local full_param_group = full_param_groups[i]
    for key, value in pairs(full_param_group) do
      if key ~= PARAMS then param_group[key] = value end
    end
    for j, pid in ipairs(param_group[PARAMS]) do
      local full_pid = full_param_group[PARAMS][j]
      local param_state = state[pid]
      if param_state then
        for attr, full_tensor in pairs(full_state[full_pid]) do
          local sharded_tensor = param_state[attr]
          if dcp._is_sharded(sharded_tensor) then
            param_state[attr] = distribute_like(full_tensor, sharded_tensor) -- exp_avg: sharded
          else
            param_state[attr] = full_tensor -- step: a plain tensor
          end
        end
      end
    end
  end
  SD.set_optimizer_state_dict(model, opt, { param_groups = param_groups, state = state })
end

function Checkpointer:_get_full_model_state_dict(model)
  if self.dcp_api then
    return SD.get_model_state_dict(model, { options = SD.StateDictOptions { full_state_dict = true, cpu_offload = true } })
  end
  local sharded_sd = SD.get_model_state_dict(model)
  local cpu_state_dict = {}
  for param_name, sharded_param in pairs(sharded_sd) do
    local full_param = sharded_param:full_tensor() -- a collective: every rank takes part
    if dist.get_rank() == 0 then cpu_state_dict[param_name] = full_param:cpu() end
  end
  return cpu_state_dict
end

function Checkpointer:_get_full_optimizer_state_dict(model, opt)
  if self.dcp_api then
    return SD.get_optimizer_state_dict(model, opt, { options = SD.StateDictOptions { full_state_dict = true, cpu_offload = true } })
  end
  local is_rank_zero = dist.get_rank() == 0
  local sharded_sd = SD.get_optimizer_state_dict(model, opt)
  local full_state = {}
  -- parameter names in the param groups' order, so every rank gathers the same tensors in turn
  for _, group in ipairs(sharded_sd.param_groups) do
    for _, pid in ipairs(group[PARAMS]) do
      local sharded_group = sharded_sd.state[pid]
      if sharded_group then
        local group_state = {}
        local attrs = {}
        for attr in pairs(sharded_group) do attrs[#attrs + 1] = attr end
        table.sort(attrs) -- the same order on every rank: full_tensor() is a collective
        for _, attr in ipairs(attrs) do
          local sharded_tensor = sharded_group[attr]
          local full_tensor = sharded_tensor
          if dcp._is_sharded(sharded_tensor) then full_tensor = sharded_tensor:full_tensor() end -- exp_avg
          if is_rank_zero then group_state[attr] = torch.is_tensor(full_tensor) and full_tensor:cpu() or full_tensor end
        end
        if is_rank_zero then full_state[pid] = group_state end
      end
    end
  end
  if is_rank_zero then return { param_groups = sharded_sd.param_groups, state = full_state } end
  return {}
end

function Checkpointer:save(model, optim)
  local model_state_dict = self:_get_full_model_state_dict(model)
  local optim_state_dict = self:_get_full_optimizer_state_dict(model, optim)
  if dist.get_rank() == 0 then
    local new_training_time = math.floor(time.time() * 1000)
    local new_checkpoint_folder = string.format("%s/%s/%d", self.folder, self.dcp_api and "dcp_api" or "dtensor_api", new_training_time)
    os.execute("mkdir -p '" .. new_checkpoint_folder .. "'")
    torch.save(model_state_dict, new_checkpoint_folder .. "/" .. MODEL_CHECKPOINT)
    torch.save(optim_state_dict, new_checkpoint_folder .. "/" .. OPTIM_CHECKPOINT)
  end
end

return { Checkpointer = new, MODEL_CHECKPOINT = MODEL_CHECKPOINT, OPTIM_CHECKPOINT = OPTIM_CHECKPOINT }
