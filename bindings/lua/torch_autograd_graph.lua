-- torch.autograd.graph's saved-tensor hooks: saved_tensors_hooks, save_on_cpu and
-- disable_saved_tensors_hooks, each a to-be-closed value (`local _ <close> = ...`) or, given a
-- function as last argument, a runner of that function. The engine calls the innermost pair
-- (bindings/saved_hooks.c); a tensor packed by a hook is not version-checked at backward, as in
-- PyTorch.
local torch = require "torch"
local U = require "nn_util"

local graph = torch.autograd.graph or {}
torch.autograd.graph = graph

-- what is in force: hooks {pack, unpack} or nil, and the message that refuses new hooks or nil
local state = { hooks = nil, disabled = nil }

local function apply()
  if state.hooks then torch._set_saved_tensors_hooks(state.hooks[1], state.hooks[2])
  else torch._set_saved_tensors_hooks() end
end

local Scope = {}
Scope.__index = Scope
function Scope.__close(self)
  if self.closed then return end
  self.closed = true
  state.hooks, state.disabled = self.prev_hooks, self.prev_disabled
  apply()
end

-- set hooks and disabled; with fn, run it and restore what was (also on error). The scope shows
-- its hooks as pack_hook and unpack_hook, as PyTorch's context objects do.
local function enter(hooks, disabled, fn)
  local scope = setmetatable({ prev_hooks = state.hooks, prev_disabled = state.disabled }, Scope)
  if hooks then scope.pack_hook, scope.unpack_hook = hooks[1], hooks[2] end
  state.hooks, state.disabled = hooks, disabled
  apply()
  return U.with(scope, fn)
end

-- parse `...` as U.parse does, less a trailing function runner (at position `from` or later, or
-- after the options), which is returned second
local function parse(fname, spec, from, ...)
  local args = table.pack(...)
  local last, fn = args[args.n], nil
  if type(last) == "function" and (args.n >= from or (args.n >= 2 and U.is_opts(args[args.n - 1]))) then
    fn = last
    args.n = args.n - 1
  end
  return U.parse(fname, spec, table.unpack(args, 1, args.n)), fn
end

-- the hooks in force, {pack, unpack}, or nil (torch.autograd.Function's save_for_backward packs through them)
function graph._current_hooks() return state.hooks end

local function refuse_if_disabled()
  if state.disabled then error(state.disabled, 3) end
end

-- saved_tensors_hooks(pack_hook, unpack_hook[, fn]): pack_hook(tensor) is called with every
-- tensor an autograd node saves, and the node keeps what it returns (any value);
-- unpack_hook(that value) gives the tensor back when backward needs it.
function graph.saved_tensors_hooks(...)
  local o, fn = parse("saved_tensors_hooks", { { "pack_hook", U.REQUIRED }, { "unpack_hook", U.REQUIRED } }, 3, ...)
  for _, k in ipairs({ "pack_hook", "unpack_hook" }) do
    if type(o[k]) ~= "function" then U.errorf("saved_tensors_hooks: %s must be a function, got %s", k, U.typename(o[k])) end
  end
  refuse_if_disabled()
  return enter({ o.pack_hook, o.unpack_hook }, nil, fn)
end

-- save_on_cpu(pin_memory=false, device_type="cuda"[, fn]): saved tensors go to the CPU (into
-- pinned memory if asked) and back to their device when backward needs them
function graph.save_on_cpu(...)
  local o, fn = parse("save_on_cpu", { { "pin_memory", false }, { "device_type", "cuda" } }, 1, ...)
  if type(o.device_type) ~= "string" then U.errorf("save_on_cpu: device_type must be a string, got %s", U.typename(o.device_type)) end
  local pin = o.pin_memory and true or false
  local function pack(t)
    if not pin then return { t.device, t:cpu() } end
    local packed = torch.empty(t:size(), { dtype = t.dtype, pin_memory = torch.cuda.is_available() })
    packed:copy_(t)
    return { t.device, packed }
  end
  local function unpack(p) return p[2]:to(p[1], { non_blocking = pin }) end
  refuse_if_disabled()
  return enter({ pack, unpack }, nil, fn)
end

-- disable_saved_tensors_hooks(error_message[, fn]): entering saved-tensor hooks inside raises
-- error_message (and so does entering this while hooks are in force)
function graph.disable_saved_tensors_hooks(...)
  local o, fn = parse("disable_saved_tensors_hooks", { { "error_message", U.REQUIRED } }, 1, ...)
  if type(o.error_message) ~= "string" then
    U.errorf("disable_saved_tensors_hooks: error_message must be a string, got %s", U.typename(o.error_message))
  end
  if state.hooks then error(o.error_message, 2) end
  return enter(nil, o.error_message, fn)
end

return graph
