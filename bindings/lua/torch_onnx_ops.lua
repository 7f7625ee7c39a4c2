-- More ops for torch.onnx.export (torch_onnx.lua): conv_transpose2d (ConvTranspose), var / std
-- (GroupNorm, InstanceNorm), argmax / argmin, max / min along a dim, any / all, ne, remainder,
-- norm, adaptive average pooling of any sizes (products with averaging matrices), log1p and
-- expm1 (softplus, mish), and Lua functions exported as one node each: torch._argsort (sort,
-- topk, kthvalue: TopK, whose values the engine's untraced sort would otherwise leave as
-- constants), cumsum (CumSum) and F.interpolate (Resize; a mode Resize does not match exports
-- as its gathers).
local torch = require "torch"
local U = require "nn_util"
local onnx = require "torch_onnx"
local F = torch.nn.functional

local I = onnx._internal
local G, HANDLERS, fail = I.G, I.HANDLERS, I.fail

-- the dims set in a reduction's mask, 0-based
local function mask_dims(e, x)
  local axes = {}
  for d = 0, x:dim() - 1 do if e.dims & (1 << d) ~= 0 then axes[#axes + 1] = d end end
  return axes
end

-- a Reduce* node keeping the reduced dims; axes are an input from opset 18 (ReduceSum: 13)
function G:reduce(op, v, axes)
  if op == "ReduceSum" or self.opset >= 18 then
    return self:node(op, { v, self:ints(axes) }, { { "keepdims", "i", 1 } })
  end
  return self:node(op, { v }, { { "keepdims", "i", 1 }, { "axes", "ints", axes } })
end

-- adaptive_avg_pool2d where the sizes do not divide: y = A_h @ x @ A_w^T, row i of A averaging
-- the input's bin floor(i * n / m) .. ceil((i + 1) * n / m) - 1, as PyTorch's bins
function G:adaptive_avg_matmul(x, y)
  local function bins(n, m)
    local a = torch.zeros(m, n, { dtype = y.dtype })
    for i = 0, m - 1 do
      local lo, hi = (i * n) // m, -((-(i + 1) * n) // m)
      a[i]:narrow(0, lo, hi - lo):fill_(1 / (hi - lo))
    end
    return a
  end
  local rows = self:node("MatMul", { self:initializer(bins(x:size(2), y:size(2))), self:read(x) })
  return self:node("MatMul", { rows, self:initializer(bins(x:size(3), y:size(3)):t()) })
end

-- norm over dims with p (f[0]): ReduceL1 / ReduceL2, the largest (smallest) |x| for +-inf, else
-- the p-th root of the sum of |x|^p
function HANDLERS.norm(g, e)
  local x, y, p = e.ins[1], e.outs[1], e.f[1]
  local axes = mask_dims(e, x)
  local v = g:operand(x, y.dtype)
  local r
  if p == 1 then r = g:reduce("ReduceL1", v, axes)
  elseif p == 2 then r = g:reduce("ReduceL2", v, axes)
  elseif p == math.huge or p == -math.huge then r = g:reduce(p > 0 and "ReduceMax" or "ReduceMin", g:node("Abs", { v }), axes)
  elseif p == 0 then
    r = g:reduce("ReduceSum", g:node("Cast", { g:node("Not", { g:node("Equal", { v, g:scalar(0, y.dtype) }) }) },
      { { "to", "i", I.elem_type(y.dtype) } }), axes)
  else
    r = g:reduce("ReduceSum", g:node("Pow", { g:node("Abs", { v }), g:scalar(p, y.dtype) }), axes)
    r = g:node("Pow", { r, g:scalar(1 / p, y.dtype) })
  end
  g:write(y, r)
end

-- ConvTranspose from the kernel conv_transpose2d runs: conv2d's input gradient
function HANDLERS.conv2d_backward_input(g, e)
  local x, w, y, i = e.ins[1], e.ins[2], e.outs[1], e.i
  if x:dim() ~= 4 then fail("conv_transpose2d of a %d-D input is not supported (give it a batch dimension)", x:dim()) end
  local k = { w:size(2), w:size(3) }
  local opad = {}
  for j = 1, 2 do
    local natural = (x:size(1 + j) - 1) * i[j] - 2 * i[2 + j] + i[4 + j] * (k[j] - 1) + 1
    opad[j] = y:size(1 + j) - natural
  end
  g:write(y, g:node("ConvTranspose", { g:read(x), g:read(w) }, { { "dilations", "ints", { i[5], i[6] } },
    { "group", "i", i[7] }, { "kernel_shape", "ints", k }, { "output_padding", "ints", opad },
    { "pads", "ints", { i[3], i[4], i[3], i[4] } }, { "strides", "ints", { i[1], i[2] } } }))
end

-- var (std: its square root) with a correction: the mean of the squared deviations times n / (n - c)
function HANDLERS.var(g, e)
  local x, y = e.ins[1], e.outs[1]
  local axes = mask_dims(e, x)
  local n = 1
  for _, d in ipairs(axes) do n = n * x:size(d) end
  local v = g:operand(x, y.dtype)
  local dev = g:node("Sub", { v, g:reduce("ReduceMean", v, axes) })
  local r = g:reduce("ReduceSum", g:node("Mul", { dev, dev }), axes)
  r = g:node("Div", { r, g:scalar(math.max(n - e.f[1], 0), y.dtype) })
  if e.i[1] == 1 then r = g:node("Sqrt", { r }) end
  g:write(y, r)
end

local function arg_reduce(op)
  return function(g, e)
    local x = e.ins[1]
    g:write(e.outs[1], g:node(op, { g:read(x) }, { { "axis", "i", mask_dims(e, x)[1] }, { "keepdims", "i", 1 } }))
  end
end
HANDLERS.argmax, HANDLERS.argmin = arg_reduce("ArgMax"), arg_reduce("ArgMin")

-- max / min along a dim: the values (out 1) and their indices (out 2)
local function value_and_index(reduce_op, arg_op)
  return function(g, e)
    local x = e.ins[1]
    local axes = mask_dims(e, x)
    local v = g:read(x)
    g:write(e.outs[1], g:reduce(reduce_op, v, axes))
    if e.outs[2] then
      g:write(e.outs[2], g:node(arg_op, { v }, { { "axis", "i", axes[1] }, { "keepdims", "i", 1 } }))
    end
  end
end
HANDLERS.max_dim, HANDLERS.min_dim = value_and_index("ReduceMax", "ArgMax"), value_and_index("ReduceMin", "ArgMin")

-- any / all: the values as booleans, reduced as int32 (max / min), back to bool
local function bool_reduce(op)
  return function(g, e)
    local x = e.ins[1]
    local b = g:operand(x, torch.bool)
    local n = g:reduce(op, g:node("Cast", { b }, { { "to", "i", I.elem_type(torch.int32) } }), mask_dims(e, x))
    g:write(e.outs[1], g:node("Cast", { n }, { { "to", "i", I.elem_type(torch.bool) } }))
  end
end
HANDLERS.any, HANDLERS.all = bool_reduce("ReduceMax"), bool_reduce("ReduceMin")

function HANDLERS.ne(g, e)
  local a, b = e.ins[1], e.ins[2]
  local dt = (a:dim() > 0 or b:dim() == 0) and a.dtype or b.dtype
  g:write(e.outs[1], g:node("Not", { g:node("Equal", { g:operand(a, dt), g:operand(b, dt) }) }))
end

-- remainder (Python's %, the divisor's sign): Mod for integers, a - floor(a / b) * b for floats
function HANDLERS.remainder(g, e)
  local y = e.outs[1]
  local a, b = g:operand(e.ins[1], y.dtype), g:operand(e.ins[2], y.dtype)
  if not y:is_floating_point() then
    g:write(y, g:node("Mod", { a, b }, { { "fmod", "i", 0 } }))
    return
  end
  g:write(y, g:node("Sub", { a, g:node("Mul", { g:node("Floor", { g:node("Div", { a, b }) }), b }) }))
end

function HANDLERS.log1p(g, e)
  local y = e.outs[1]
  g:write(y, g:node("Log", { g:node("Add", { g:operand(e.ins[1], y.dtype), g:scalar(1, y.dtype) }) }))
end

function HANDLERS.expm1(g, e)
  local y = e.outs[1]
  g:write(y, g:node("Sub", { g:node("Exp", { g:operand(e.ins[1], y.dtype) }), g:scalar(1, y.dtype) }))
end

-- torch._argsort(x, dim, descending): the indices output of a TopK over the whole dim
onnx._symbolic(torch, "_argsort", "argsort", function(g, reg)
  local x, dim, descending = reg.args[1], reg.args[2], reg.args[3]
  if x:dim() == 0 then fail("sorting a 0-d tensor is not supported") end
  if dim < 0 then dim = dim + x:dim() end
  local _, idx = g:node("TopK", { g:read(x), g:ints({ x:size(dim) }) },
    { { "axis", "i", dim }, { "largest", "i", descending and 1 or 0 }, { "sorted", "i", 1 } }, 2)
  g:write(reg.res[1], idx)
  return true
end)

-- cumsum (torch.cumsum and the method): CumSum, in the result's dtype; cumprod has no ONNX op
local scan_spec = { { "input" }, { "dim" }, { "dtype" } }
local function cumsum(g, reg)
  local o = U.parse("cumsum", scan_spec, table.unpack(reg.args, 1, reg.args.n))
  local x, y = o.input, reg.res[1]
  if x:dim() == 0 then return false end
  local dim = o.dim < 0 and o.dim + x:dim() or o.dim
  g:write(y, g:node("CumSum", { g:operand(x, y.dtype), g:initializer(torch.tensor(dim, { dtype = torch.int64 })) }))
  return true
end
local function cumprod() fail("exporting cumprod is not supported: ONNX has no cumulative product") end
onnx._symbolic(torch, "cumsum", "cumsum", cumsum)
onnx._symbolic(torch.Tensor, "cumsum", "cumsum", cumsum)
onnx._symbolic(torch, "cumprod", "cumprod", cumprod)
onnx._symbolic(torch.Tensor, "cumprod", "cumprod", cumprod)

-- F.interpolate of a 4-D input, nearest / nearest-exact / bilinear: Resize with the given scales
-- (PyTorch maps output to input coordinates with 1 / scale_factor) or the output sizes
local interp_spec = { { "input" }, { "size" }, { "scale_factor" }, { "mode", "nearest" }, { "align_corners" },
  { "recompute_scale_factor" }, { "antialias", false } }
local RESIZE = { nearest = { "nearest", "asymmetric", "floor" }, ["nearest-exact"] = { "nearest", "half_pixel", "round_prefer_ceil" },
  bilinear = { "linear", "pytorch_half_pixel" } }
onnx._symbolic(F, "interpolate", "interpolate", function(g, reg)
  local o = U.parse("interpolate", interp_spec, table.unpack(reg.args, 1, reg.args.n))
  local x, y = o.input, reg.res[1]
  local how = RESIZE[o.mode]
  if not how or x:dim() ~= 4 or not torch.is_tensor(y) or not x:is_floating_point() then return false end
  local attrs = { { "mode", "s", how[1] }, { "coordinate_transformation_mode", "s", how[2] } }
  if o.align_corners then attrs[2][3] = "align_corners" end
  if how[3] then attrs[3] = { "nearest_mode", "s", how[3] } end
  local inputs = { g:read(x), "" }
  if o.scale_factor ~= nil and not o.recompute_scale_factor and not o.align_corners then
    local s = type(o.scale_factor) == "number" and { o.scale_factor, o.scale_factor } or o.scale_factor
    inputs[3] = g:initializer(torch.tensor({ 1, 1, s[1], s[2] }, { dtype = torch.float32 }))
  else
    inputs[3], inputs[4] = "", g:ints({ y:size(0), y:size(1), y:size(2), y:size(3) })
  end
  g:write(y, g:node("Resize", inputs, attrs))
  return true
end)

return onnx
