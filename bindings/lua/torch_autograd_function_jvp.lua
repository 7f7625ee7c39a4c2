-- Forward-mode AD through a custom Function's jvp(ctx, ...) staticmethod, as PyTorch's:
--
--   function Fn.forward(ctx, x) local y = x:exp(); ctx.result = y; return y end
--   function Fn.jvp(ctx, t) return t * ctx.result end
--
-- When a Function that defines jvp is applied inside a forward AD level to arguments carrying
-- tangents, forward runs on their primals, jvp gets one tangent per argument of forward (zeros
-- for a tensor without one, nil for a non-tensor) and returns one per result, and each tensor
-- result becomes a dual with its tangent. nnrepl's duals are otherwise lazy (computed from
-- backward formulas at unpack_dual, see torch_forward_ad.lua); such a result starts anew, so
-- inside the level it has no reverse-mode history back through the Function. Elsewhere (no
-- level, no tangents, or no jvp) apply is unchanged.
require "torch_autograd_function"
require "torch_forward_ad"
local torch = require "torch"
local U = require "nn_util"

local Function = torch.autograd.Function
local fwAD = torch.autograd.forward_ad

-- the tangents of the arguments (nil when none has one)
local function tangents_of(args)
  local ts, any = {}, false
  for i = 1, args.n do
    if torch.is_tensor(args[i]) then
      local t = fwAD.unpack_dual(args[i]).tangent
      if t ~= nil then any = true end
      ts[i] = t
    end
  end
  return any and ts or nil
end

local function apply_jvp(cls, args, ts)
  local ctx = setmetatable({ needs_input_grad = {}, _non_differentiable = {}, _name = cls.__name .. "Backward" }, Function._Ctx)
  local primals = { n = args.n }
  for i = 1, args.n do
    local a = args[i]
    ctx.needs_input_grad[i] = false
    if torch.is_tensor(a) then
      primals[i] = a:detach()
      if ts[i] == nil and a:is_floating_point() then ts[i] = torch.zeros_like(a) end
    else
      primals[i] = a
    end
  end
  local outs = table.pack(torch.no_grad(function() return cls.forward(ctx, table.unpack(primals, 1, primals.n)) end))
  local saved = rawget(ctx, "_saved")
  ctx._versions = {}
  for i = 1, saved and saved.n or 0 do
    if saved[i] ~= nil then ctx._versions[i] = saved[i]._version end
  end
  local touts = table.pack(torch.no_grad(function() return cls.jvp(ctx, table.unpack(ts, 1, args.n)) end))
  if touts.n ~= outs.n then
    U.errorf("%s.jvp returned %d tangents, but forward returned %d outputs: jvp must return one per output",
      cls.__name, touts.n, outs.n)
  end
  for j = 1, outs.n do
    local o, t = outs[j], touts[j]
    if torch.is_tensor(o) and not ctx._non_differentiable[o] and o:is_floating_point() then
      if not torch.is_tensor(t) then
        U.errorf("%s.jvp: output %d is a Tensor, so its tangent must be a Tensor, got %s", cls.__name, j - 1, U.typename(t))
      end
      if tostring(t.shape) ~= tostring(o.shape) then
        U.errorf("%s.jvp: the tangent of output %d has shape %s, but the output has shape %s", cls.__name, j - 1,
          tostring(t.shape), tostring(o.shape))
      end
      outs[j] = fwAD.make_dual(o, t)
    end
  end
  return table.unpack(outs, 1, outs.n)
end

local extend = Function.extend
function Function:extend(name)
  local cls = extend(self, name)
  local plain = cls.apply
  cls.apply = function(...)
    if cls.jvp ~= nil then
      local args = table.pack(...)
      local ts = tangents_of(args)
      if ts then return apply_jvp(cls, args, ts) end
    end
    return plain(...)
  end
  return cls
end

return {}
