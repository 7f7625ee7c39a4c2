-- torch.autograd.Function: an op whose forward and backward are written in Lua.
--
--   local Exp = torch.autograd.Function:extend("Exp")
--   function Exp.forward(ctx, x) local y = x:exp(); ctx:save_for_backward(y); return y end
--   function Exp.backward(ctx, grad) local y = table.unpack(ctx.saved_tensors); return grad * y end
--   local y = Exp.apply(x)
--
-- forward runs without grad mode and may return several values; backward gets one gradient
-- per value forward returned (zeros where none flowed, nil for a value that is not a
-- differentiable tensor) and returns one per argument of forward (nil: none). The context
-- carries save_for_backward / saved_tensors, needs_input_grad (one boolean per argument),
-- mark_non_differentiable, and any field a function sets on it.
local torch = require "torch"
local C = torch

local graph = require "torch_autograd_graph"

local Ctx = {}
Ctx.__index = Ctx
Ctx.__name = "torch.autograd.function.FunctionCtx"

function Ctx:save_for_backward(...)
  local saved = table.pack(...)
  for i = 1, saved.n do
    if saved[i] ~= nil and not torch.is_tensor(saved[i]) then
      error(string.format("save_for_backward can only save tensors, but argument %d is of type %s", i - 1, type(saved[i])), 2)
    end
  end
  rawset(self, "_saved", saved)
end

function Ctx:mark_non_differentiable(...)
  for _, t in ipairs({ ... }) do self._non_differentiable[t] = true end
end

function Ctx:mark_dirty()
  error("ctx:mark_dirty (an in-place custom Function) is not supported", 2)
end

-- ctx.saved_tensors: what save_for_backward kept, checked against in-place changes since
local function saved_tensors(ctx)
  if rawget(ctx, "_freed") then error(C._saved_freed_message, 0) end
  local s = rawget(ctx, "_saved")
  if not s then return {} end
  local out = {}
  local packed = rawget(ctx, "_packed")
  for i = 1, s.n do
    local t = s[i]
    if packed and packed[i] then -- through the saved-tensor hooks in force at apply (no version check)
      t = packed[i].unpack(packed[i].value)
      if not torch.is_tensor(t) then
        error("Output of saved tensor unpack_hook expected to be a Tensor but got result of type " .. type(t), 0)
      end
    elseif t ~= nil and t._version ~= ctx._versions[i] then
      error(string.format("one of the variables needed for gradient computation has been modified by an inplace " ..
        "operation: saved tensor %d of %s is at version %d; expected version %d instead.", i - 1, ctx._name, t._version,
        ctx._versions[i]), 0)
    end
    local j = ctx._saved_result and ctx._saved_result[i]
    if j and t ~= nil then t = C._function_saved_output(t, j) end -- its history back, for double backward
    out[i] = t
  end
  return out
end

Ctx.__index = function(ctx, k)
  if k == "saved_tensors" then return saved_tensors(ctx) end
  return Ctx[k]
end

-- after a backward pass without retain_graph, what save_for_backward kept is let go, as the
-- engine frees a built-in node's saved tensors (so it is reclaimed without waiting for the result)
local function free_saved(ctx, ...)
  if rawget(ctx, "_saved") then
    rawset(ctx, "_saved", nil)
    rawset(ctx, "_packed", nil)
    rawset(ctx, "_freed", true)
  end
  return ...
end

local Function = { __name = "torch.autograd.Function" }
Function.__index = Function
Function._Ctx = Ctx -- for torch_autograd_function_jvp.lua

local function apply(cls, ...)
  local args = table.pack(...)
  -- the node's name: "<Class>Backward", or _node_name where nnrepl's own functions give PyTorch's op names
  local ctx = setmetatable({ needs_input_grad = {}, _non_differentiable = {}, _name = cls._node_name or cls.__name .. "Backward" },
    Ctx)
  local any = false
  local grad_mode = torch.is_grad_enabled()
  for i = 1, args.n do
    local need = grad_mode and torch.is_tensor(args[i]) and args[i].requires_grad or false
    ctx.needs_input_grad[i] = need
    any = any or need
  end
  local outs = table.pack(torch.no_grad(function() return cls.forward(ctx, table.unpack(args, 1, args.n)) end))
  if not any then return table.unpack(outs, 1, outs.n) end
  local given = {}
  for j = 1, outs.n do given[j] = outs[j] end
  outs.non_differentiable = ctx._non_differentiable
  C._function_node(ctx._name, args, args.n, outs, function(retain, ...)
    if retain then return cls.backward(ctx, ...) end
    return free_saved(ctx, cls.backward(ctx, ...))
  end)
  -- a result kept by ctx (saved, or a field) is kept without its history: with it, the graph
  -- would hold itself through the registry, where the collector cannot see the cycle
  local function unhooked(v)
    for j = 1, outs.n do
      if rawequal(v, given[j]) and torch.is_tensor(outs[j]) then return outs[j]:detach(), j end
    end
    return v
  end
  for k, v in pairs(ctx) do
    if torch.is_tensor(v) then rawset(ctx, k, (unhooked(v))) end
  end
  local saved = rawget(ctx, "_saved")
  local hooks = graph._current_hooks()
  ctx._versions = {}
  ctx._saved_result = {} -- saved index -> which result it is
  if hooks and saved then ctx._packed = {} end
  for i = 1, saved and saved.n or 0 do
    if saved[i] ~= nil then
      saved[i], ctx._saved_result[i] = unhooked(saved[i])
      ctx._versions[i] = saved[i]._version
      if hooks then -- pack keeps what it returns instead of the tensor
        local t = saved[i]
        ctx._packed[i] = { value = torch.no_grad(function() return hooks[1](t) end), unpack = hooks[2] }
        saved[i] = nil
      end
    end
  end
  return table.unpack(outs, 1, outs.n)
end

-- local Name = torch.autograd.Function:extend("Name"); define Name.forward and Name.backward
function Function:extend(name)
  if type(name) ~= "string" then error("extend: the class name must be a string, as Function:extend(\"Name\")", 2) end
  local cls = setmetatable({ __name = name }, self)
  cls.__index = cls
  cls.apply = function(...) return apply(cls, ...) end
  return cls
end

function Function.forward()
  error("a custom Function must define forward(ctx, ...)", 2)
end

function Function.backward()
  error("a custom Function must define backward(ctx, ...) to be differentiated", 0)
end

torch.autograd.Function = Function
