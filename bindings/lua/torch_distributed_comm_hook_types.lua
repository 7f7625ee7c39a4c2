-- torch.distributed.algorithms.ddp_comm_hooks: DDPCommHookType and register_ddp_comm_hook (a
-- hook registered on a model by name), and debugging_hooks.noop_hook.
--
--   local ch = torch.distributed.algorithms.ddp_comm_hooks
--   ch.register_ddp_comm_hook(ch.DDPCommHookType.POWER_SGD, model)   -- PowerSGD, rank 1
local U = require "nn_util"
local futures = require "torch_futures"
local dist = require "torch_distributed"
local default_hooks = require "torch_distributed_hooks"
local psgd = require "torch_distributed_powersgd"

local ddp_comm_hooks = dist.algorithms.ddp_comm_hooks

-- the bucket as it is, with no communication (to measure what the all-reduce costs)
local debugging_hooks = {}
ddp_comm_hooks.debugging_hooks = debugging_hooks
function debugging_hooks.noop_hook(_, bucket)
  local fut = futures.Future()
  fut:set_result(bucket:buffer())
  return fut
end

-- each type registers its hook with state as the process group; the PowerSGD ones make a
-- PowerSGDState of that group with their rank (start_powerSGD_iter 1000)
local type_mt = { __name = "torch.distributed.algorithms.ddp_comm_hooks.DDPCommHookType",
  __tostring = function(t) return "DDPCommHookType." .. t.name end }

local function plain(name, hook)
  return setmetatable({ name = name, register = function(model, state) model:register_comm_hook(state, hook) end }, type_mt)
end

local function powersgd(name, hook, rank)
  return setmetatable({ name = name, register = function(model, state)
    local s = psgd.PowerSGDState(state, { matrix_approximation_rank = rank, start_powerSGD_iter = 1000 })
    model:register_comm_hook(s, hook)
  end }, type_mt)
end

local function unsupported(name)
  return setmetatable({ name = name, register = function()
    U.errorf("DDPCommHookType.%s: the quantization hooks are not supported here; use FP16_COMPRESS, BF16_COMPRESS or POWER_SGD to compress gradients", name)
  end }, type_mt)
end

ddp_comm_hooks.DDPCommHookType = {
  ALLREDUCE = plain("ALLREDUCE", default_hooks.allreduce_hook),
  FP16_COMPRESS = plain("FP16_COMPRESS", default_hooks.fp16_compress_hook),
  BF16_COMPRESS = plain("BF16_COMPRESS", default_hooks.bf16_compress_hook),
  QUANTIZE_PER_TENSOR = unsupported("QUANTIZE_PER_TENSOR"),
  QUANTIZE_PER_CHANNEL = unsupported("QUANTIZE_PER_CHANNEL"),
  POWER_SGD = powersgd("POWER_SGD", psgd.powerSGD_hook, 1),
  POWER_SGD_RANK2 = powersgd("POWER_SGD_RANK2", psgd.powerSGD_hook, 2),
  BATCHED_POWER_SGD = powersgd("BATCHED_POWER_SGD", psgd.batched_powerSGD_hook, 1),
  BATCHED_POWER_SGD_RANK2 = powersgd("BATCHED_POWER_SGD_RANK2", psgd.batched_powerSGD_hook, 2),
  NOOP = plain("NOOP", debugging_hooks.noop_hook),
}

-- register_ddp_comm_hook(comm_hook_type, model, state=nil): state is the process group
function ddp_comm_hooks.register_ddp_comm_hook(...)
  local o = U.parse("register_ddp_comm_hook", { { "comm_hook_type", U.REQUIRED }, { "model", U.REQUIRED }, { "state" } }, ...)
  if getmetatable(o.comm_hook_type) ~= type_mt then
    U.errorf("register_ddp_comm_hook: comm_hook_type must be a DDPCommHookType, got %s", tostring(o.comm_hook_type))
  end
  o.comm_hook_type.register(o.model, o.state)
end

return ddp_comm_hooks
