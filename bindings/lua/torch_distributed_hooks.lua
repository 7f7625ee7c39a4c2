-- DDP communication hooks: DistributedDataParallel:register_comm_hook(state, hook),
-- :_register_builtin_comm_hook(dist.BuiltinCommHookType.X), dist.GradBucket and
-- torch.distributed.algorithms.ddp_comm_hooks.default_hooks (allreduce_hook,
-- fp16_compress_hook, bf16_compress_hook, fp16_compress_wrapper, bf16_compress_wrapper).
--
--   local hooks = torch.distributed.algorithms.ddp_comm_hooks.default_hooks
--   model:register_comm_hook(nil, hooks.fp16_compress_hook)
--
-- The reducer (engine/dist/reducer.c) calls hook(state, bucket) as soon as a bucket's
-- gradients are all in (during backward), so the all-reduce the hook starts overlaps the rest
-- of backward; at the end of backward it waits for each bucket's Future and copies its value
-- into the gradients. The builtin hooks, and default_hooks' functions registered as they are
-- (with the default group), run inside the reducer, with no Lua call per bucket.
local torch = require "torch"
local U = require "nn_util"
local futures = require "torch_futures"
local dist = require "torch_distributed"
local DDP = require("nn_parallel").DistributedDataParallel

-- ---- GradBucket ----
local GradBucket = { __name = "torch.distributed.GradBucket" }
GradBucket.__index = GradBucket
dist.GradBucket = GradBucket

local function new_bucket(ddp, index, buffer, last)
  return setmetatable({ _ddp = ddp, _index = index, _buffer = buffer, _last = last }, GradBucket)
end

-- the bucket's index: 0 is the bucket of the last parameters (the first gradients backward computes)
function GradBucket:index() return self._index end
-- the flat tensor of the bucket's gradients, not divided by the world size
function GradBucket:buffer() return self._buffer end
function GradBucket:is_last() return self._last end

function GradBucket:set_buffer(buffer)
  if not torch.is_tensor(buffer) then U.errorf("GradBucket.set_buffer: a Tensor expected, got %s", U.typename(buffer)) end
  self._buffer = buffer
end

-- the bucket's parameters, in the order of their gradients in the buffer
function GradBucket:parameters()
  if not self._params then
    local trainable = {}
    for _, p in ipairs(self._ddp.module:parameters()) do
      if p.requires_grad then trainable[#trainable + 1] = p end
    end
    local ps = {}
    for j, i in ipairs(self._ddp._reducer:buckets()[self._index + 1]) do ps[j] = trainable[i + 1] end
    self._params = ps
  end
  return self._params
end

-- each parameter's gradient as a view of the buffer (set_buffer's, if set), shaped like the parameter
function GradBucket:gradients()
  local out, offset = {}, 0
  for j, p in ipairs(self:parameters()) do
    local n = p:numel()
    out[j] = self._buffer:narrow(0, offset, n):view(p:size())
    offset = offset + n
  end
  return out
end

-- ---- BuiltinCommHookType ----
local hook_type_mt = { __tostring = function(t) return "BuiltinCommHookType." .. t.name end,
  __name = "torch.distributed.BuiltinCommHookType" }
dist.BuiltinCommHookType = {
  ALLREDUCE = setmetatable({ name = "ALLREDUCE", _kind = "allreduce" }, hook_type_mt),
  FP16_COMPRESS = setmetatable({ name = "FP16_COMPRESS", _kind = "fp16" }, hook_type_mt),
}

-- ---- DistributedDataParallel ----

local callable = futures._callable

-- the hook and state of each model, held as long as the model lives (an ephemeron table: the
-- state may refer to the model without keeping it alive)
local registered = setmetatable({}, { __mode = "k" })

-- default_hooks' functions registered as they are run inside the reducer (set below)
local in_reducer = {}

local function check_once(ddp, first, second)
  if registered[ddp] then U.errorf("%s or %s can only be called once.", first, second) end
end

function DDP:register_comm_hook(state, hook)
  if not callable(hook) then U.error("Communication hook must be callable.") end
  check_once(self, "register_comm_hook", "register_builtin_comm_hook")
  if in_reducer[hook] and (state == nil or state == dist.group.WORLD) then
    self._reducer:set_comm_hook(in_reducer[hook])
    registered[self] = { hook = hook, state = state }
    return
  end
  local holder = setmetatable({ ddp = self }, { __mode = "v" }) -- the reducer's callbacks hold the model weakly
  local pending = {}
  local function run(k, buffer, last)
    local ddp = holder.ddp
    local h = registered[ddp]
    local fut = h.hook(h.state, new_bucket(ddp, k, buffer, last))
    if not futures.is_future(fut) then
      U.errorf("DDP communication hook's callback must return a torch.futures.Future object, but got %s", U.typename(fut))
    end
    pending[k] = fut
  end
  local function result(k)
    local fut = pending[k]
    pending[k] = nil
    return fut:wait()
  end
  self._reducer:set_comm_hook("custom", run, result)
  registered[self] = { hook = hook, state = state }
end

-- ALLREDUCE and FP16_COMPRESS, run inside the reducer (no Lua call per bucket)
function DDP:_register_builtin_comm_hook(comm_hook_type)
  if getmetatable(comm_hook_type) ~= hook_type_mt then
    U.errorf("_register_builtin_comm_hook: comm_hook_type must be torch.distributed.BuiltinCommHookType.ALLREDUCE or FP16_COMPRESS, got %s",
      tostring(comm_hook_type))
  end
  check_once(self, "register_builtin_comm_hook", "register_comm_hook")
  self._reducer:set_comm_hook(comm_hook_type._kind)
  registered[self] = { hook = comm_hook_type }
end

-- ---- torch.distributed.algorithms.ddp_comm_hooks.default_hooks ----
local default_hooks = {}
dist.algorithms = dist.algorithms or {}
dist.algorithms.ddp_comm_hooks = dist.algorithms.ddp_comm_hooks or {}
dist.algorithms.ddp_comm_hooks.default_hooks = default_hooks

local function group_of(process_group) return process_group or dist.group.WORLD end

-- t divided by the group's size first (no overflow in 16 bits), then summed over the group;
-- a Future of the sum
local function average(process_group, t)
  local g = group_of(process_group)
  t:div_(dist.get_world_size(g))
  return dist.all_reduce(t, { group = g, async_op = true }):get_future()
end

-- the bucket averaged over the ranks: the same result as DDP without a hook
function default_hooks.allreduce_hook(process_group, bucket)
  return average(process_group, bucket:buffer()):then_(function(f) return f:value()[1] end)
end

local function compress_hook(dtype)
  return function(process_group, bucket)
    local buffer = bucket:buffer()
    local fut = average(process_group, buffer:to(dtype))
    return fut:then_(function(f) return buffer:copy_(f:value()[1]) end)
  end
end

-- the bucket sent as float16 / bfloat16 (half the bytes), averaged, written back in the buffer's dtype
default_hooks.fp16_compress_hook = compress_hook(torch.float16)
default_hooks.bf16_compress_hook = compress_hook(torch.bfloat16)

-- hook(state, bucket) run on the bucket cast to float16 / bfloat16 (set_buffer), its result
-- written back into the original buffer
local function compress_wrapper(dtype, name)
  return function(hook)
    if not callable(hook) then U.errorf("%s: hook must be callable, got %s", name, U.typename(hook)) end
    return function(state, bucket)
      local buffer = bucket:buffer()
      bucket:set_buffer(buffer:to(dtype))
      local fut = hook(state, bucket)
      if not futures.is_future(fut) then
        U.errorf("DDP communication hook's callback must return a torch.futures.Future object, but got %s", U.typename(fut))
      end
      return fut:then_(function(f)
        local v = f:value()
        if type(v) == "table" and not torch.is_tensor(v) then v = v[1] end
        return buffer:copy_(v)
      end)
    end
  end
end
default_hooks.fp16_compress_wrapper = compress_wrapper(torch.float16, "fp16_compress_wrapper")
default_hooks.bf16_compress_wrapper = compress_wrapper(torch.bfloat16, "bf16_compress_wrapper")

-- the same computations done by the reducer in C, with no Lua call per bucket
in_reducer[default_hooks.allreduce_hook] = "allreduce"
in_reducer[default_hooks.fp16_compress_hook] = "fp16"
in_reducer[default_hooks.bf16_compress_hook] = "bf16"

return default_hooks
