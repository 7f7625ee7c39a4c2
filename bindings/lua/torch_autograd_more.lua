-- More of torch.autograd: Variable (the legacy wrapper: a tensor now), the grad-mode switches
-- under torch.autograd, gradgradcheck, and torch.set_anomaly_enabled.
require "torch_anomaly"
require "torch_ops_extra" -- torch.autograd.gradcheck
local torch = require "torch"
local U = require "nn_util"
local autograd = torch.autograd

-- Variable(t, {requires_grad=false, volatile=}): a tensor sharing t's data, outside t's graph
function autograd.Variable(data, ...)
  local o = U.parse("Variable", { { "requires_grad", false }, { "volatile", false } }, ...)
  U.check_tensor("Variable", "data", 1, data)
  if o.volatile then U.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` instead.") end
  local v = data:detach()
  if o.requires_grad then v:requires_grad_(true) end
  return v
end
autograd.variable = { Variable = autograd.Variable }

autograd.no_grad = torch.no_grad
autograd.enable_grad = torch.enable_grad
autograd.set_grad_enabled = torch.set_grad_enabled
autograd.inference_mode = torch.inference_mode
autograd.grad_mode = { no_grad = torch.no_grad, enable_grad = torch.enable_grad, set_grad_enabled = torch.set_grad_enabled,
  inference_mode = torch.inference_mode }
autograd.anomaly_mode = { detect_anomaly = autograd.detect_anomaly, set_detect_anomaly = autograd.set_detect_anomaly }

-- set_anomaly_enabled(enabled, check_nan=true): anomaly detection on or off from now on
function torch.set_anomaly_enabled(enabled, check_nan)
  autograd.set_detect_anomaly(enabled, check_nan)
end

-- gradgradcheck(func, inputs, {grad_outputs=, eps=, atol=, rtol=, raise_exception=, ...}): gradcheck of
-- the map (inputs, grad_outputs) -> the gradients of func's outputs, so second derivatives
-- against finite differences of the first. Without grad_outputs, random float64 ones that
-- require grad (their derivatives are checked too).
function autograd.gradgradcheck(func, inputs, ...)
  local o = U.parse("gradgradcheck", { { "grad_outputs" }, { "eps", 1e-6 }, { "atol", 1e-5 }, { "rtol", 1e-3 },
    { "gen_non_contig_grad_outputs", false }, { "raise_exception", true }, { "nondet_tol", 0.0 },
    { "check_undefined_grad", true }, { "check_grad_dtypes", false }, { "check_batched_grad", false },
    { "check_fwd_over_rev", false }, { "check_rev_over_rev", true }, { "fast_mode", false }, { "masked", false } }, ...)
  local xs = torch.is_tensor(inputs) and { inputs } or inputs
  local nx = #xs
  local function outputs(...)
    local r = table.pack(func(...))
    if r.n == 1 and type(r[1]) == "table" and not torch.is_tensor(r[1]) then return r[1] end
    return { table.unpack(r, 1, r.n) }
  end
  -- the outputs that carry gradients, and grad outputs for them
  local function differentiable(outs)
    local list = {}
    for _, y in ipairs(outs) do
      if torch.is_tensor(y) and y.requires_grad then list[#list + 1] = y end
    end
    return list
  end
  local gos = o.grad_outputs
  if torch.is_tensor(gos) then gos = { gos } end
  if gos == nil then
    gos = {}
    for i, y in ipairs(differentiable(outputs(table.unpack(xs, 1, nx)))) do
      gos[i] = torch.randn(y:size(), { dtype = y.dtype, device = y.device }):requires_grad_(y:is_floating_point())
    end
  end
  local wrt = {} -- positions of the inputs that require grad
  for i, x in ipairs(xs) do
    if torch.is_tensor(x) and x.requires_grad then wrt[#wrt + 1] = i end
  end
  -- gradcheck calls this with its own copies of the inputs (not requiring grad, under no_grad,
  -- for the finite differences): those become leaves here
  local function first_derivatives(...)
    local args = table.pack(...)
    local ins, gs = { table.unpack(args, 1, nx) }, { table.unpack(args, nx + 1, args.n) }
    return torch.enable_grad(function()
      local leaves = {}
      for k, i in ipairs(wrt) do
        if not ins[i].requires_grad then ins[i] = ins[i]:detach():requires_grad_(true) end
        leaves[k] = ins[i]
      end
      local g = torch.autograd.grad(differentiable(outputs(table.unpack(ins, 1, nx))), leaves, gs,
        { create_graph = true, allow_unused = true })
      local out = {}
      for k, x in ipairs(leaves) do out[k] = g[k] or torch.zeros_like(x) end
      return out
    end)
  end
  local all = { table.unpack(xs, 1, nx) }
  for i, g in ipairs(gos) do all[nx + i] = g end
  if #wrt == 0 then
    U.error("gradgradcheck expects at least one input tensor to require gradient, but none of the them have requires_grad=True.")
  end
  return autograd.gradcheck(first_derivatives, all, { eps = o.eps, atol = o.atol, rtol = o.rtol,
    raise_exception = o.raise_exception })
end
