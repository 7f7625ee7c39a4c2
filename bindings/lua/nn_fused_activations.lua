-- The activations with fused kernels (torch._activation and its backward: one pass each way, in
-- PyTorch's order of operations), each f(x, p, q) as one autograd node with PyTorch's name
-- (GeluBackward0, SiluBackward0, ...; torch._activation_node, in C). The composite of each, made of
-- differentiable ops, runs for inputs that are not floating point and while torch.onnx.export
-- traces; under create_graph the node's backward is the derivative written here in differentiable
-- ops, so second derivatives follow. Used by torch_functional.lua and torch_functional_more.lua,
-- which parse the arguments.
local torch = require "torch"

local SQRT_HALF, SQRT_2_OVER_PI = math.sqrt(0.5), math.sqrt(2 / math.pi)

local function softplus(x, beta, threshold)
  local bx = x * beta
  -- log1p(exp(.)) of the clamped value: no overflow where the linear branch is taken
  local soft = bx:clamp(nil, threshold):exp():log1p() / beta
  return torch.where(bx:gt(threshold), x, soft)
end
local function relu6(v) return v:clamp(0, 6) end
local tracing = torch._tracer.running

-- kind (torch._activation's), PyTorch's node name (as the C node's), composite(x, p, q), and the gradient
-- grad(x, g, p, q) = g * f'(x) in differentiable ops (the backward under create_graph)
local function sig(x) return x:sigmoid() end
local ACTIVATIONS = {
  { "gelu", "GeluBackward0", function(x) return x * ((x * SQRT_HALF):erf() + 1) * 0.5 end,
    function(x, g) return g * (((x * SQRT_HALF):erf() + 1) * 0.5 + x * (x * x * -0.5):exp() * (1 / math.sqrt(2 * math.pi))) end },
  { "gelu_tanh", "GeluBackward0", function(x) return x * (((x + x ^ 3 * 0.044715) * SQRT_2_OVER_PI):tanh() + 1) * 0.5 end,
    function(x, g)
      local t = ((x + x ^ 3 * 0.044715) * SQRT_2_OVER_PI):tanh()
      return g * ((t + 1) * 0.5 + x * 0.5 * (1 - t * t) * ((x * x * (3 * 0.044715) + 1) * SQRT_2_OVER_PI))
    end },
  { "silu", "SiluBackward0", function(x) return x * sig(x) end,
    function(x, g) local s = sig(x); return g * s * (x * (1 - s) + 1) end },
  { "mish", "MishBackward0", function(x) return x * softplus(x, 1, 20):tanh() end,
    function(x, g) local t = softplus(x, 1, 20):tanh(); return g * (t + x * sig(x) * (1 - t * t)) end },
  { "softplus", "SoftplusBackward0", softplus,
    function(x, g, beta, threshold) return torch.where((x * beta):gt(threshold), g, g * sig(x * beta)) end },
  -- min(x, 0) - log1p(exp(-|x|)), stable for either sign
  { "log_sigmoid", "LogSigmoidBackward0", function(x) return x:clamp(nil, 0) - (-x:abs()):exp():log1p() end,
    function(x, g) return g * sig(-x) end },
  { "leaky_relu", "LeakyReluBackward0", function(x, slope) return torch.where(x:gt(0), x, x * slope) end,
    function(x, g, slope) return torch.where(x:gt(0), g, g * slope) end },
  -- exp of the clamped input: no inf (and no nan gradient) on the positive side
  { "elu", "EluBackward0", function(x, alpha) return torch.where(x:gt(0), x, (x:clamp(nil, 0):exp() - 1) * alpha) end,
    function(x, g, alpha) return torch.where(x:gt(0), g, g * x:clamp(nil, 0):exp() * alpha) end },
  { "hardswish", "HardswishBackward0", function(x) return x * relu6(x + 3) / 6 end,
    function(x, g) return torch.where(x:lt(-3), g * 0, torch.where(x:le(3), g * (x / 3 + 0.5), g)) end },
  { "hardsigmoid", "HardsigmoidBackward0", function(x) return relu6(x + 3) / 6 end,
    function(x, g) return torch.where(x:gt(-3):logical_and(x:lt(3)), g / 6, g * 0) end },
}

local M = { composite = {} } -- M.composite[kind]: the composite alone
for _, a in ipairs(ACTIVATIONS) do
  local kind, composite, grad_of = a[1], a[3], a[4]
  M.composite[kind] = composite
  torch._activation_set_grad(kind, grad_of)
  M[kind] = function(x, p, q)
    -- the composite for other dtypes, and for torch.onnx.export's tracer (its ops export)
    if not x.dtype.is_floating_point or tracing() then return composite(x, p, q) end
    return torch._activation_node(kind, x, p, q)
  end
end

return M
