-- Forward-mode products (J v) by the double-backward trick, for torch.func.linearize / hessian,
-- torch.func.jvp / jacfwd where an op on f's path has no forward rule (jvp_forward.lua),
-- torch.autograd.functional.jvp and torch.autograd.forward_ad.
--
-- For outputs y of leaves x, the first backward with dummy cotangents u (zeros that require
-- grad) and create_graph gives g = J^T u, linear in u; the gradient of <g, v> against u is J v.
-- One first backward serves any number of tangents v (one second backward each).
local torch = require "torch"
local U = require "nn_util"

local M = {}

-- fn(), an autograd failure on the way (an op without double backward) raised as one of
-- forward-mode AD in `api`
local function guarded(api, fn)
  local ok, res = pcall(fn)
  if ok then return res end
  local msg = tostring(res)
  if msg:find("double backward", 1, true) then
    U.errorf("%s: forward-mode AD is computed here by differentiating the backward pass (double backward), " ..
      "which fails on an op of this function: %s", api, (msg:gsub("^[^\n]-:%d+: ", "", 1)))
  end
  error(res, 0)
end

-- the checks make_dual(primal, tangent) does; any_dtype: a tangent of another floating or
-- complex dtype is accepted (forward_ad.make_dual keeps it as given, as PyTorch does)
function M.check_dual(p, t, any_dtype)
  if not p:is_floating_point() and not p:is_complex() then
    U.errorf("Expected primal to be floating point or complex, but got: %s", tostring(p.dtype))
  end
  if not t:is_floating_point() and not t:is_complex() then
    U.errorf("Expected tangent to be floating point or complex, but got: %s", tostring(t.dtype))
  end
  if tostring(p:size()) ~= tostring(t:size()) then
    U.errorf("Trying to set a forward gradient that has a different size than that of the original Tensor, this is not supported. Tensor is of size %s while the given forward gradient is of size %s.",
      "[" .. table.concat(p:size():totable(), ", ") .. "]", "[" .. table.concat(t:size():totable(), ", ") .. "]")
  end
  if p.dtype ~= t.dtype and not any_dtype then
    U.errorf("Trying to set a forward gradient of dtype %s on a Tensor of dtype %s, this is not supported here: convert the tangent with :to(primal.dtype)",
      tostring(t.dtype), tostring(p.dtype))
  end
  if tostring(p.device) ~= tostring(t.device) then
    U.errorf("Expected tangent to be on the same device as primal, but got: primal on %s and tangent on %s", tostring(p.device), tostring(t.device))
  end
end

-- M.linear_map(api, outs, leaves) -> apply(tangents, create), gs: the product J t for every output
-- (a list aligned with outs; nil where an output does not depend on any leaf with a tangent),
-- tangents a list aligned with leaves (nil: zero). outs were computed from leaves with grad
-- mode on; apply may be called any number of times (create: results differentiable). gs: the
-- first backward's gradients against the leaves (nil where unused).
function M.linear_map(api, outs, leaves)
  local live, us, u_of = {}, {}, {}
  for k, y in ipairs(outs) do
    if y.requires_grad then
      live[#live + 1] = y
      us[#us + 1] = torch.zeros_like(y):detach():requires_grad_()
      u_of[k] = #us
    end
  end
  local gs = {}
  if #live > 0 and #leaves > 0 then
    gs = guarded(api, function()
      local _ <close> = torch.enable_grad()
      return torch.autograd.grad(live, leaves, us, { create_graph = true, retain_graph = true, allow_unused = true })
    end)
  end
  return function(tangents, create)
    local g, t = {}, {}
    for i = 1, #leaves do
      -- a gradient that does not require grad does not depend on u: J_i = 0
      if gs[i] ~= nil and gs[i].requires_grad and tangents[i] ~= nil then
        g[#g + 1] = gs[i]
        t[#t + 1] = tangents[i]:to(gs[i].dtype)
      end
    end
    local r = {}
    if #g > 0 then
      r = guarded(api, function()
        local _ <close> = create and torch.enable_grad() or nil
        return torch.autograd.grad(g, us, t, { retain_graph = true, create_graph = create, allow_unused = true })
      end)
    end
    local res = {}
    for k in ipairs(outs) do
      local v = u_of[k] and r[u_of[k]]
      if v ~= nil then res[k] = create and v or v:detach() end
    end
    return res
  end, gs
end

return M
