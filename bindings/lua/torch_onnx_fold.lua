-- torch.onnx.export's do_constant_folding (on by default, as in PyTorch): a node whose inputs
-- are all initializers (constants and, with export_params, parameters) is computed at export
-- time with tensor ops and becomes an initializer under its output's name. Nodes are visited
-- in order, so whole constant subgraphs fold; an op with no evaluator here stays a node, and so
-- does a node that computes a graph output.
local torch = require "torch"
local onnx = require "torch_onnx"

local DTYPE = { [1] = torch.float32, [2] = torch.uint8, [3] = torch.int8, [5] = torch.int16, [6] = torch.int32,
  [7] = torch.int64, [9] = torch.bool, [10] = torch.float16, [11] = torch.float64, [16] = torch.bfloat16 }

local function shape_of(t) return t:size():totable() end

local function attr(n, name)
  for _, a in ipairs(n.attrs) do if a[1] == name then return a[3] end end
end

-- each evaluator: (list of input tensors or false for "", node) -> tensor, or nil to leave the node
local EVAL = {}
for op, f in pairs({ Neg = torch.neg, Sqrt = torch.sqrt, Exp = torch.exp, Log = torch.log, Reciprocal = torch.reciprocal,
  Floor = torch.floor, Ceil = torch.ceil, Abs = torch.abs, Relu = torch.relu, Sigmoid = torch.sigmoid, Tanh = torch.tanh,
  Erf = torch.erf, Sin = torch.sin, Cos = torch.cos, Not = torch.logical_not, Identity = function(x) return x end }) do
  EVAL[op] = function(x) return f(x[1]) end
end
for op, f in pairs({ Add = torch.add, Sub = torch.sub, Mul = torch.mul, Max = torch.maximum, Min = torch.minimum,
  Equal = torch.eq, Less = torch.lt, Greater = torch.gt, LessOrEqual = torch.le, GreaterOrEqual = torch.ge,
  And = torch.logical_and, Or = torch.logical_or, MatMul = torch.matmul }) do
  EVAL[op] = function(x) return f(x[1], x[2]) end
end

function EVAL.Div(x) -- integer division truncates in ONNX
  if x[1]:is_floating_point() then return torch.div(x[1], x[2]) end
  return torch.div(x[1], x[2], { rounding_mode = "trunc" })
end

function EVAL.Pow(x) return torch.pow(x[1], x[2]):to(x[1].dtype) end
function EVAL.Where(x) return torch.where(x[1], x[2], x[3]) end
function EVAL.Cast(x, n) return DTYPE[attr(n, "to")] and x[1]:to(DTYPE[attr(n, "to")]) end

function EVAL.Clip(x)
  local y = x[1]
  if x[2] then y = torch.maximum(y, x[2]) end
  if x[3] then y = torch.minimum(y, x[3]) end
  return y
end

function EVAL.Reshape(x)
  local want, shape = x[2]:tolist(), shape_of(x[1])
  for d, v in ipairs(want) do if v == 0 then want[d] = shape[d] end end
  return x[1]:reshape(want)
end

function EVAL.Transpose(x, n) return x[1]:permute(attr(n, "perm")):contiguous() end

function EVAL.Slice(x)
  local y, starts, ends = x[1], x[2]:tolist(), x[3]:tolist()
  local axes, steps = x[4] and x[4]:tolist(), x[5] and x[5]:tolist()
  for k = 1, #starts do
    local ax, step = axes and axes[k] or k - 1, steps and steps[k] or 1
    if ax < 0 then ax = ax + y:dim() end
    local len = y:size(ax)
    local lo, hi = starts[k], ends[k]
    if lo < 0 then lo = lo + len end
    if hi < 0 then hi = hi + len end
    lo, hi = math.max(0, math.min(lo, len)), math.max(0, math.min(hi, len))
    if step < 1 then return nil end -- backwards: not written by the exporter
    y = y:index_select(ax, torch.arange(lo, math.max(hi, lo), step, { dtype = torch.int64 }))
  end
  return y
end

function EVAL.Gemm(x, n)
  local a, b = x[1], x[2]
  if attr(n, "transA") == 1 then a = a:t() end
  if attr(n, "transB") == 1 then b = b:t() end
  local y = torch.matmul(a, b) * (attr(n, "alpha") or 1)
  if x[3] then y = y + x[3] * (attr(n, "beta") or 1) end
  return y
end

-- Reduce*: axes from the attribute or the second input (none: all dims), keepdims
for op, f in pairs({ ReduceSum = torch.sum, ReduceMean = torch.mean, ReduceMax = torch.amax, ReduceMin = torch.amin }) do
  EVAL[op] = function(x, n)
    local axes = attr(n, "axes") or (x[2] and x[2]:tolist())
    if not axes or #axes == 0 then
      axes = {}
      for d = 0, x[1]:dim() - 1 do axes[d + 1] = d end
    end
    return f(x[1], axes, attr(n, "keepdims") ~= 0)
  end
end

function EVAL.CumSum(x) return torch.cumsum(x[1], x[2]:item()) end

function EVAL.Pad(x, n) -- constant mode, zeros
  if (attr(n, "mode") or "constant") ~= "constant" or x[3] then return nil end
  local pads, shape = x[2]:tolist(), shape_of(x[1])
  local nd = #shape
  for d = 1, nd do shape[d] = shape[d] + pads[d] + pads[nd + d] end
  local out = torch.zeros(shape, { dtype = x[1].dtype })
  local inside = out
  for d = 1, nd do inside = inside:narrow(d - 1, pads[d], x[1]:size(d - 1)) end
  inside:copy_(x[1])
  return out
end

function EVAL.Concat(x, n) return torch.cat(x, attr(n, "axis")) end

function EVAL.Expand(x) -- both ways broadcasting
  local a, b = shape_of(x[1]), x[2]:tolist()
  local nd = math.max(#a, #b)
  local out = {}
  for d = 1, nd do
    local p, q = a[d - nd + #a] or 1, b[d - nd + #b] or 1
    out[d] = p == 1 and q or p
  end
  local padded = {}
  for d = 1, nd do padded[d] = a[d - nd + #a] or 1 end
  return x[1]:reshape(padded):expand(out):contiguous()
end

function EVAL.Gather(x, n)
  local data, idx = x[1], x[2]
  local axis = attr(n, "axis") or 0
  if axis < 0 then axis = axis + data:dim() end
  local len = data:size(axis)
  local flat = torch.where(idx:lt(0), idx + len, idx):reshape(-1):to(torch.int64)
  local shape, ishape, dshape = {}, shape_of(idx), shape_of(data)
  for d = 1, axis do shape[#shape + 1] = dshape[d] end
  for _, s in ipairs(ishape) do shape[#shape + 1] = s end
  for d = axis + 2, #dshape do shape[#shape + 1] = dshape[d] end
  return data:index_select(axis, flat):reshape(shape)
end

function onnx._fold(g, outputs)
  local value, is_output = {}, {}
  for _, t in ipairs(g.inits) do value[t.name] = t.t end
  for _, v in ipairs(outputs) do is_output[v.name] = true end
  local kept = {}
  for _, n in ipairs(g.nodes) do
    local f, ins, const = EVAL[n.op], {}, #n.outputs == 1 and not is_output[n.outputs[1]]
    for k, name in ipairs(n.inputs) do
      if name == "" then ins[k] = false
      elseif value[name] then ins[k] = value[name]
      else const = false end
    end
    local y = const and f and f(ins, n)
    if y then
      g:initializer(y, n.outputs[1])
      value[n.outputs[1]] = g.inits[#g.inits].t
    else
      kept[#kept + 1] = n
    end
  end
  g.nodes = kept
end

return onnx
