-- torch.utils.checkpoint's other names: CheckpointError, set_checkpoint_early_stop,
-- detach_variable, noop_context_fn, get_device_states / set_device_states, CheckpointPolicy,
-- SelectiveCheckpointContext and create_selective_checkpoint_contexts.
-- checkpoint() takes context_fn= (with use_reentrant=false, as PyTorch): noop_context_fn runs
-- as plain checkpointing. Selective activation checkpointing (the contexts that
-- create_selective_checkpoint_contexts makes) is refused with a clear error: its policy is
-- asked about each aten op, and nnrepl's autograd has no per-op dispatch to ask it from.
-- With use_reentrant=false, a recomputation whose tensor results differ in shape, dtype or device
-- from the forward's raises a CheckpointError (determinism_check="none" turns that off).
-- Recomputation here always runs fn to its end; PyTorch's early stop only saves time, so
-- set_checkpoint_early_stop is kept as a setting that changes no result.
local torch = require "torch"
local U = require "nn_util"
local errors = require "torch_errors"
local checkpoint = require "torch_checkpoint"

checkpoint.CheckpointError = errors.class("torch.utils.checkpoint.CheckpointError", { "torch%.utils%.checkpoint: " })

-- set_checkpoint_early_stop(enable[, fn]): a to-be-closed value, or runs fn with the setting
checkpoint._early_stop = true
function checkpoint.set_checkpoint_early_stop(enable, fn)
  if type(enable) ~= "boolean" then U.errorf("set_checkpoint_early_stop: enable must be a boolean, got %s", U.typename(enable)) end
  local prev = checkpoint._early_stop
  checkpoint._early_stop = enable
  return U.scoped(function() checkpoint._early_stop = prev end, fn)
end

-- detach_variable(inputs): the list with each tensor detached, requires_grad as it was
function checkpoint.detach_variable(inputs)
  if type(inputs) ~= "table" or getmetatable(inputs) ~= nil then
    U.errorf("Only tuple of tensors is supported. Got Unsupported input type: %s", torch.is_tensor(inputs) and "Tensor" or U.typename(inputs))
  end
  local out = {}
  for i = 1, #inputs do
    local v = inputs[i]
    if torch.is_tensor(v) then
      local d = v:detach()
      d.requires_grad = v.requires_grad
      v = d
    end
    out[i] = v
  end
  return out
end

-- a context that does nothing (Python's contextlib.nullcontext()): closing it is a no-op
local null_mt = { __name = "contextlib.nullcontext", __close = function() end }
local function nullcontext() return setmetatable({}, null_mt) end

-- noop_context_fn(): the forward's and the recomputation's contexts, both doing nothing
function checkpoint.noop_context_fn() return nullcontext(), nullcontext() end

-- the CUDA devices of the tensors in args (nested lists too), in order of first appearance
local function cuda_devices(v, out, seen)
  if torch.is_tensor(v) then
    if v.is_cuda then
      local d = v:get_device()
      if not seen[d] then seen[d] = true; out[#out + 1] = d end
    end
  elseif type(v) == "table" and getmetatable(v) == nil and not seen[v] then
    seen[v] = true
    for _, x in pairs(v) do cuda_devices(x, out, seen) end
  end
  return out
end

-- get_device_states(...): the CUDA devices of the tensor arguments and their RNG states
-- (one generator serves every device here, so the states are equal)
function checkpoint.get_device_states(...)
  local ids = cuda_devices(table.pack(...), {}, {})
  local states = {}
  for i = 1, #ids do states[i] = torch.cuda.get_rng_state(ids[i]) end
  return ids, states
end

-- set_device_states(devices, states, {device_type=}): puts those RNG states back
function checkpoint.set_device_states(devices, states, ...)
  local o = U.parse("set_device_states", { { "device_type" } }, ...)
  if o.device_type ~= nil and o.device_type ~= "cuda" then
    U.errorf("set_device_states: device_type %s is not supported (only cuda)", tostring(o.device_type))
  end
  if type(devices) ~= "table" or type(states) ~= "table" or #devices ~= #states then
    U.error("set_device_states: devices and states must be lists of the same length")
  end
  for i = 1, #devices do torch.cuda.set_rng_state(states[i], devices[i]) end
end

-- CheckpointPolicy: PyTorch's enum values
local policy_mt = { __name = "torch.utils.checkpoint.CheckpointPolicy",
  __tostring = function(p) return "CheckpointPolicy." .. p.name end }
local Policy = {}
for i, name in ipairs({ "MUST_SAVE", "PREFER_SAVE", "MUST_RECOMPUTE", "PREFER_RECOMPUTE" }) do
  Policy[name] = setmetatable({ name = name, value = i - 1 }, policy_mt)
end
checkpoint.CheckpointPolicy = Policy

-- SelectiveCheckpointContext(is_recompute): what a policy function receives as ctx
local SCC = { __name = "SelectiveCheckpointContext" }
SCC.__index = SCC
setmetatable(SCC, { __call = function(_, ...)
  local o = U.parse("SelectiveCheckpointContext", { { "is_recompute", U.REQUIRED } }, ...)
  return setmetatable({ is_recompute = o.is_recompute }, SCC)
end })
checkpoint.SelectiveCheckpointContext = SCC

local sac_mt = { __name = "torch.utils.checkpoint._SelectiveCheckpointContext", __close = function() end }

-- create_selective_checkpoint_contexts(policy_fn_or_list, allow_cache_entry_mutation=false):
-- the forward's and the recomputation's contexts for context_fn
function checkpoint.create_selective_checkpoint_contexts(policy, ...)
  local o = U.parse("create_selective_checkpoint_contexts", { { "allow_cache_entry_mutation", false } }, ...)
  local ok = type(policy) == "function" or (getmetatable(policy) and getmetatable(policy).__call)
  if not ok and type(policy) == "table" and getmetatable(policy) == nil then
    ok = true -- a list of ops: those are saved, the rest recomputed
    policy = { ops = policy }
  end
  if not ok then U.error("policy_fn_or_list must be either a function or a list of ops.") end
  return setmetatable({ policy = policy, is_recompute = false, allow_cache_entry_mutation = o.allow_cache_entry_mutation }, sac_mt),
    setmetatable({ policy = policy, is_recompute = true, allow_cache_entry_mutation = o.allow_cache_entry_mutation }, sac_mt)
end

-- PyTorch's metadata text of a tensor: {'shape': torch.Size([2]), 'dtype': torch.float32, 'device': device(type='cpu')}
local function metadata(t)
  local d = t.device
  local dev = d.index ~= nil and string.format("device(type='%s', index=%d)", d.type, d.index) or string.format("device(type='%s')", d.type)
  return string.format("{'shape': %s, 'dtype': %s, 'device': %s}", tostring(t.shape), tostring(t.dtype), dev)
end

-- fn, wrapped to compare the recomputation's tensor results with the forward's (shape, dtype,
-- device), as use_reentrant=false's determinism_check="default": a difference is a CheckpointError
local function checked(fn)
  local saved
  return function(...)
    local outs = table.pack(fn(...))
    local meta = {}
    for i = 1, outs.n do
      if torch.is_tensor(outs[i]) then meta[#meta + 1] = metadata(outs[i]) end
    end
    if saved == nil then
      saved = meta
    else
      local diff = {}
      for i = 1, math.max(#saved, #meta) do
        if saved[i] ~= meta[i] then
          diff[#diff + 1] = string.format("tensor at position %d:\nsaved metadata: %s\nrecomputed metadata: %s", i - 1,
            saved[i] or "None", meta[i] or "None")
        end
      end
      if #diff > 0 then
        U.error("torch.utils.checkpoint: Recomputed values for the following tensors have different metadata than " ..
          "during the forward pass.\n" .. table.concat(diff, "\n"))
      end
    end
    return table.unpack(outs, 1, outs.n)
  end
end

local base = checkpoint.checkpoint
function checkpoint.checkpoint(fn, ...)
  local args = table.pack(...)
  local last = args[args.n]
  if args.n > 0 and U.is_opts(last) and last.determinism_check ~= nil then
    local d = last.determinism_check
    if d ~= "default" and d ~= "none" then
      U.errorf("determinism_check should be one of ['default', 'none'], but got %s", tostring(d))
    end
  end
  if args.n > 0 and U.is_opts(last) and last.use_reentrant == false and last.determinism_check ~= "none" then
    local module = type(fn) == "table" and type(fn.parameters) == "function" and fn or nil
    local run = checked(fn)
    fn = run
    if module then -- still a module's parameters to the base checkpoint
      fn = setmetatable({ parameters = function() return module:parameters() end }, { __call = function(_, ...) return run(...) end })
    end
  end
  if args.n > 0 and U.is_opts(last) and (last.context_fn ~= nil) then
    if last.use_reentrant ~= false then
      U.error("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
    end
    if last.context_fn ~= checkpoint.noop_context_fn then
      local ok, fwd = pcall(last.context_fn)
      if ok and getmetatable(fwd) == sac_mt then
        U.error("checkpoint: selective activation checkpointing (create_selective_checkpoint_contexts) is not supported: " ..
          "nnrepl's autograd cannot ask a policy about each op; checkpoint recomputes all of fn, so checkpoint only " ..
          "the parts to recompute and call the parts to save outside checkpoint")
      end
      U.error("checkpoint: context_fn other than noop_context_fn is not supported (nnrepl's to-be-closed contexts " ..
        "are entered when made, so the forward's and the recomputation's cannot be told apart)")
    end
    local opts = {}
    for k, v in pairs(last) do if k ~= "context_fn" then opts[k] = v end end
    args[args.n] = opts
  end
  return base(fn, table.unpack(args, 1, args.n))
end

return checkpoint
