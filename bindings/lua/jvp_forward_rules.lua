-- The forward-mode rules of jvp_forward.lua: for each Tensor method, torch function and
-- torch.nn.functional function with one, the output's primal and its tangent (J t by the op's own
-- derivative) from the arguments' primals and tangents.
local torch = require "torch"
local V = require "vmap_batched"
local FW = require "jvp_forward"

local F = torch.nn.functional
local opt_args, is_kw = V.opt_args, V.is_kw
local methods, F_rules, torch_rules, torch_names = FW.methods, FW.F_rules, FW.torch_rules, FW.torch_names
local norule, is_dual, dual, P, T = FW.norule, FW.is, FW.dual, FW.primal, FW.tangent

local function is_tensorish(x) return is_dual(x) or V.is_tensorish(x) end

-- the primals of a packed argument list (and of plain list arguments' elements)
local function primals(a)
  local out = { n = a.n }
  for i = 1, a.n do
    local x = a[i]
    if type(x) == "table" and getmetatable(x) == nil then
      local c = {}
      for k, e in pairs(x) do c[k] = P(e) end
      x = c
    end
    out[i] = P(x)
  end
  return out
end

local function no_duals(what, a, from)
  for i = from, a.n do
    local x = a[i]
    if is_dual(x) then norule(what .. " with a dual argument " .. i) end
    if type(x) == "table" and getmetatable(x) == nil then
      for _, e in pairs(x) do if is_dual(e) then norule(what .. " with a dual in a list") end end
    end
  end
end

-- t shaped as the primal result p (a broadcast operand's tangent expanded)
local function fit(t, p)
  if t == nil then return nil end
  if t:dim() ~= p:dim() or tostring(t:size()) ~= tostring(p:size()) then return t:expand(p:size()) end
  return t
end

local function tadd(a, b)
  if a == nil then return b end
  if b == nil then return a end
  return a + b
end

-- ---------------------------------------------------------------- linear in the first argument

-- fn(x, ...) linear in x (a view, a reduction, a pool of averages, a dtype cast): the tangent is
-- fn of the tangent; results beyond the first that are tensors (indices) are the primal's
local function linear(what, fn)
  return function(x, ...)
    local a = table.pack(x, ...)
    no_duals(what, a, 2)
    local r = table.pack(fn(P(x), ...))
    local t = T(x)
    if t == nil then return table.unpack(r, 1, r.n) end
    local rt = table.pack(fn(t, ...))
    if type(r[1]) == "table" and getmetatable(r[1]) == nil then -- split, chunk, unbind: a list
      local out = {}
      for i, p in ipairs(r[1]) do out[i] = dual(p, rt[1][i]) end
      return out
    end
    if not is_tensorish(r[1]) then return table.unpack(r, 1, r.n) end
    r[1] = dual(r[1], rt[1])
    return table.unpack(r, 1, r.n)
  end
end
FW.linear = linear -- (indexing a DualTensor)
local function method_of(name) return function(v, ...) return v[name](v, ...) end end

FW.linear_methods = { "view", "reshape", "flatten", "unflatten", "squeeze", "unsqueeze", "transpose", "swapaxes",
  "swapdims", "permute", "t", "expand", "repeat", "contiguous", "clone", "select", "narrow", "index_select", "gather",
  "take_along_dim", "movedim", "moveaxis", "split", "chunk", "unbind", "tensor_split", "sum", "mean", "cumsum",
  "flip", "roll", "diagonal", "diag", "tril", "triu", "trace", "neg", "negative", "positive", "to", "float",
  "double", "half", "bfloat16", "cpu", "cuda", "real", "nansum" }
for _, name in ipairs(FW.linear_methods) do methods[name] = linear("Tensor." .. name, method_of(name)) end
for _, name in ipairs({ "view_as", "reshape_as", "expand_as" }) do
  local base = name:gsub("_as$", "")
  methods[name] = function(x, o) return methods[base](x, P(o):size()) end
end
function methods.type_as(x, o) return methods.to(x, P(o).dtype) end
function methods.detach(x) return P(x):detach() end
function methods.requires_grad_(x, ...) P(x):requires_grad_(...); return x end

-- queries answered by the primal
for _, name in ipairs({ "size", "dim", "ndimension", "numel", "nelement", "is_floating_point", "is_complex",
  "element_size", "get_device", "stride", "is_contiguous", "data_ptr", "storage_offset" }) do
  methods[name] = function(x, ...) return P(x)[name](P(x), ...) end
end
function methods.type(x, ...)
  if select("#", ...) == 0 then return P(x):type() end
  return methods.to(x, ...)
end

-- ---------------------------------------------------------------- pointwise

-- y = f(x): the tangent is t * d(x, y)
local function unary(name, d)
  return function(x, ...)
    local a = table.pack(x, ...)
    no_duals("Tensor." .. name, a, 2)
    local p = P(x)
    local y = p[name](p, ...)
    local t = T(x)
    if t == nil then return y end
    return dual(y, t * d(p, y, ...))
  end
end
local SQRT_2_PI = math.sqrt(2 / math.pi)
local unary_rules = {
  relu = function(x) return x:gt(0):to(x.dtype) end,
  exp = function(_, y) return y end,
  log = function(x) return x:reciprocal() end,
  tanh = function(_, y) return 1 - y * y end,
  sigmoid = function(_, y) return y * (1 - y) end,
  sqrt = function(_, y) return 0.5 / y end,
  rsqrt = function(_, y) return -0.5 * y * y * y end,
  sin = function(x) return x:cos() end,
  cos = function(x) return -x:sin() end,
  abs = function(x) return x:sign() end,
  square = function(x) return 2 * x end,
  reciprocal = function(_, y) return -(y * y) end,
  log1p = function(x) return (1 + x):reciprocal() end,
  expm1 = function(_, y) return y + 1 end,
  erf = function(x) return (2 / math.sqrt(math.pi)) * (-(x * x)):exp() end,
}
for name, d in pairs(unary_rules) do methods[name] = unary(name, d) end
unary_rules.silu = function(x) local s = x:sigmoid(); return s * (1 + x * (1 - s)) end
unary_rules.logsigmoid = function(x) return (-x):sigmoid() end

-- results that do not vary smoothly with x (comparisons, signs, roundings, argmax): the primal's,
-- with no tangent (zero), as PyTorch's
FW.constant_names = { "gt", "lt", "ge", "le", "eq", "ne", "greater", "less", "greater_equal", "less_equal",
  "not_equal", "isnan", "isinf", "isfinite", "sign", "sgn", "signbit", "floor", "ceil", "round", "trunc", "argmax",
  "argmin", "argsort", "logical_not", "logical_and", "logical_or", "equal", "allclose", "isclose", "nonzero",
  "count_nonzero", "any", "all", "item", "tolist" }
for _, name in ipairs(FW.constant_names) do
  methods[name] = function(x, ...)
    local a = primals(table.pack(x, ...))
    local p = a[1]
    if not V.is_tensorish(p) then norule("Tensor." .. name .. " of a number") end
    return p[name](p, table.unpack(a, 2, a.n))
  end
end

-- pow with a number exponent
function methods.pow(x, e)
  if not is_dual(x) or type(e) ~= "number" then norule("pow with a tensor exponent") end
  local p = P(x)
  return dual(p:pow(e), T(x) * (e * p:pow(e - 1)))
end

-- F.* activations (an inplace flag computes out of place: the result is what the caller uses)
local function F_unary(name, d, names)
  return function(x, ...)
    local o = opt_args(table.pack(...), names or {})
    local a = table.pack(x, ...)
    no_duals("F." .. name, a, 2)
    local p = P(x)
    local y = d.value(p, o)
    local t = T(x)
    if t == nil then return y end
    return dual(y, t * d.deriv(p, y, o))
  end
end
F_rules.relu = F_unary("relu", { value = function(x) return F.relu(x) end, deriv = unary_rules.relu }, { "inplace" })
F_rules.sigmoid = F_unary("sigmoid", { value = function(x) return x:sigmoid() end, deriv = unary_rules.sigmoid })
F_rules.tanh = F_unary("tanh", { value = function(x) return x:tanh() end, deriv = unary_rules.tanh })
F_rules.silu = F_unary("silu", { value = function(x) return F.silu(x) end, deriv = unary_rules.silu }, { "inplace" })
F_rules.logsigmoid = F_unary("logsigmoid", { value = function(x) return F.logsigmoid(x) end, deriv = unary_rules.logsigmoid })
F_rules.leaky_relu = F_unary("leaky_relu", {
  value = function(x, o) return F.leaky_relu(x, o.negative_slope or 0.01) end,
  deriv = function(x, _, o) local s = o.negative_slope or 0.01; return x:gt(0):to(x.dtype) * (1 - s) + s end,
}, { "negative_slope", "inplace" })
F_rules.elu = F_unary("elu", {
  value = function(x, o) return F.elu(x, o.alpha or 1.0) end,
  deriv = function(x, y, o) local m = x:gt(0):to(x.dtype); return m + (1 - m) * (y + (o.alpha or 1.0)) end,
}, { "alpha", "inplace" })
F_rules.softplus = F_unary("softplus", {
  value = function(x, o) return F.softplus(x, o.beta or 1.0, o.threshold or 20.0) end,
  deriv = function(x, _, o)
    local b, th = o.beta or 1.0, o.threshold or 20.0
    local lin = (x * b):gt(th):to(x.dtype)
    return lin + (1 - lin) * (x * b):sigmoid()
  end,
}, { "beta", "threshold" })
F_rules.gelu = F_unary("gelu", {
  value = function(x, o) return F.gelu(x, { approximate = o.approximate or "none" }) end,
  deriv = function(x, _, o)
    if (o.approximate or "none") == "tanh" then
      local inner = SQRT_2_PI * (x + 0.044715 * x * x * x)
      local th = inner:tanh()
      return 0.5 * (1 + th) + 0.5 * x * (1 - th * th) * SQRT_2_PI * (1 + 3 * 0.044715 * x * x)
    end
    return 0.5 * (1 + (x / math.sqrt(2)):erf()) + x * (-(x * x) / 2):exp() / math.sqrt(2 * math.pi)
  end,
}, { "approximate" })
F_rules.hardtanh = F_unary("hardtanh", {
  value = function(x, o) return F.hardtanh(x, o.min_val or -1.0, o.max_val or 1.0) end,
  deriv = function(x, _, o) return x:gt(o.min_val or -1.0):logical_and(x:lt(o.max_val or 1.0)):to(x.dtype) end,
}, { "min_val", "max_val", "inplace" })
F_rules.relu6 = F_unary("relu6", {
  value = function(x) return F.relu6(x) end,
  deriv = function(x) return x:gt(0):logical_and(x:lt(6)):to(x.dtype) end,
}, { "inplace" })
function methods.clamp(x, lo, hi)
  if is_tensorish(lo) or is_tensorish(hi) then norule("clamp with tensor bounds") end
  if type(lo) == "table" then norule("clamp with keywords") end
  local p = P(x)
  local y = p:clamp(lo, hi)
  local t = T(x)
  if t == nil then return y end
  local m = p:eq(p) -- ones where in range (NaN excluded, as the gradient)
  if lo ~= nil then m = m:logical_and(p:ge(lo)) end
  if hi ~= nil then m = m:logical_and(p:le(hi)) end
  return dual(y, t * m:to(p.dtype))
end
methods.clip = methods.clamp

-- ---------------------------------------------------------------- binary

local function bin_args(name, extra)
  if extra.n > 1 or (extra.n == 1 and not (type(extra[1]) == "number" or (is_kw(extra[1]) and extra[1].alpha))) then
    norule("Tensor." .. name .. " with these options")
  end
  local e = extra[1]
  if type(e) == "table" then e = e.alpha end
  return e
end

-- a + alpha b and a - alpha b
local function add_like(name, sign)
  return function(a, b, ...)
    local alpha = bin_args(name, table.pack(...))
    local pa, pb = P(a), P(b)
    local y
    if alpha == nil then
      y = sign > 0 and pa + pb or pa - pb
    elseif V.is_tensorish(pa) then
      y = pa[name](pa, pb, alpha)
    else
      norule(name .. " of a number with alpha")
    end
    local ta, tb = T(a), T(b)
    if ta == nil and tb == nil then return y end
    if tb ~= nil then tb = tb * (sign * (alpha or 1)) end
    return dual(y, fit(tadd(ta, tb), y))
  end
end
methods.add = add_like("add", 1)
methods.sub = add_like("sub", -1)
methods.subtract = methods.sub
function methods.rsub(a, b, ...) return methods.sub(b, a, ...) end

function methods.mul(a, b)
  local pa, pb = P(a), P(b)
  local y = pa * pb
  local ta, tb = T(a), T(b)
  if ta == nil and tb == nil then return y end
  return dual(y, fit(tadd(ta and ta * pb, tb and pa * tb), y))
end
methods.multiply = methods.mul
function methods.div(a, b, ...)
  if select("#", ...) > 0 then norule("div with rounding_mode") end
  local pa, pb = P(a), P(b)
  local y = pa / pb
  local ta, tb = T(a), T(b)
  if ta == nil and tb == nil then return y end
  return dual(y, fit(tadd(ta and ta / pb, tb and -(tb * y / pb)), y))
end
methods.divide, methods.true_divide = methods.div, methods.div

-- products: bilinear, the tangent is op(ta, pb) + op(pa, tb)
local function bilinear(name)
  return function(a, b, ...)
    local a2 = table.pack(a, b, ...)
    no_duals(name, a2, 3)
    local op = torch[name]
    local pa, pb = P(a), P(b)
    local y = op(pa, pb, ...)
    local ta, tb = T(a), T(b)
    if ta == nil and tb == nil then return y end
    return dual(y, tadd(ta and op(ta, pb, ...), tb and op(pa, tb, ...)))
  end
end
for _, name in ipairs({ "matmul", "mm", "bmm", "mv", "dot", "outer", "inner" }) do methods[name] = bilinear(name) end

local function select_mask(name, cmp)
  return function(a, b)
    local pa, pb = P(a), P(b)
    local y = torch[name](pa, pb)
    local ta, tb = T(a), T(b)
    if ta == nil and tb == nil then return y end
    local m = cmp(pa, pb) -- where a is taken
    local t = torch.where(m, fit(ta, y) or 0.0, fit(tb, y) or 0.0)
    return dual(y, t:to(y.dtype))
  end
end
methods.maximum = select_mask("maximum", function(a, b) return torch.ge(a, b) end)
methods.minimum = select_mask("minimum", function(a, b) return torch.le(a, b) end)

function methods.where(x, cond, other)
  if is_dual(cond) then norule("where with a dual condition") end
  local px, po = P(x), P(other)
  local y = torch.where(cond, px, po)
  local tx, to = T(x), T(other)
  if tx == nil and to == nil then return y end
  return dual(y, torch.where(cond, fit(tx, y) or 0.0, fit(to, y) or 0.0):to(y.dtype))
end

-- cat / stack: the tangents of the parts (zeros for a part without one)
local function list_op(name)
  return function(list, ...)
    no_duals("torch." .. name, table.pack(...), 1)
    local ps, any = {}, false
    for i, x in ipairs(list) do
      ps[i] = P(x)
      if T(x) ~= nil then any = true end
    end
    local y = torch[name](ps, ...)
    if not any then return y end
    local ts = {}
    for i, x in ipairs(list) do ts[i] = T(x) or torch.zeros_like(P(x)) end
    return dual(y, torch[name](ts, ...))
  end
end

-- ---------------------------------------------------------------- softmax, losses

-- the dim of softmax(x, dim) / x:softmax(dim) / F.softmax(x, dim, ..., {dim=})
local function dim_arg(name, ...)
  local a = table.pack(...)
  local d = a[1]
  if is_kw(d) then d = d.dim end
  if is_kw(a[a.n]) and a[a.n].dim ~= nil then d = a[a.n].dim end
  if math.type(d) ~= "integer" then norule(name .. " without a dim") end
  return d
end
local function softmax_like(name, log)
  return function(x, ...)
    local d = dim_arg(name, ...)
    local p = P(x)
    local y = F[name](p, ...)
    local t = T(x)
    if t == nil then return y end
    t = t:to(y.dtype)
    if log then
      local s = y:exp()
      return dual(y, t - (s * t):sum(d, true))
    end
    return dual(y, y * (t - (y * t):sum(d, true)))
  end
end
F_rules.softmax = softmax_like("softmax", false)
F_rules.log_softmax = softmax_like("log_softmax", true)
methods.softmax, methods.log_softmax = F_rules.softmax, F_rules.log_softmax

-- nll_loss is linear in its input for a given target
F_rules.nll_loss = function(input, target, ...)
  if is_dual(target) then norule("nll_loss with a dual target") end
  return linear("F.nll_loss", function(x, ...) return F.nll_loss(x, ...) end)(input, target, ...)
end
-- cross entropy of class indices: nll_loss of log_softmax over the classes
F_rules.cross_entropy = function(input, target, ...)
  local o = opt_args(table.pack(...), { "weight", "size_average", "ignore_index", "reduce", "reduction", "label_smoothing" })
  if is_dual(target) or is_dual(o.weight) then norule("cross_entropy with a dual target or weight") end
  if (o.label_smoothing or 0) ~= 0 or o.size_average ~= nil or o.reduce ~= nil then
    norule("cross_entropy with label_smoothing or legacy arguments")
  end
  local p = P(input)
  if target.dtype ~= torch.int64 or p:dim() == 0 then norule("cross_entropy of probability targets") end
  local lsm = F_rules.log_softmax(input, { dim = p:dim() == 1 and 0 or 1 })
  local kw = {}
  for _, k in ipairs({ "weight", "ignore_index", "reduction" }) do kw[k] = o[k] end
  if next(kw) == nil then return F_rules.nll_loss(lsm, target) end
  return F_rules.nll_loss(lsm, target, kw)
end

local function reduce(v, reduction)
  if reduction == "mean" then return v:mean() end
  if reduction == "sum" then return v:sum() end
  if reduction == "none" then return v end
  norule("a loss with reduction " .. tostring(reduction))
end
local function loss_opts(name, ...)
  local o = opt_args(table.pack(...), { "size_average", "reduce", "reduction" })
  if o.size_average ~= nil or o.reduce ~= nil then norule("F." .. name .. " legacy arguments") end
  return o.reduction or "mean"
end
-- pointwise losses of input - target: the reduction of d(diff) * the tangent of diff
local function diff_loss(name, d)
  return function(input, target, ...)
    local red = loss_opts(name, ...)
    local pi, pt = P(input), P(target)
    local y = F[name](pi, pt, { reduction = red })
    local ti, tt = T(input), T(target)
    if ti == nil and tt == nil then return y end
    local diff = pi - pt
    return dual(y, reduce(d(diff) * fit(tadd(ti, tt and -tt), diff), red))
  end
end
F_rules.mse_loss = diff_loss("mse_loss", function(diff) return 2 * diff end)
F_rules.l1_loss = diff_loss("l1_loss", function(diff) return diff:sign() end)

-- ---------------------------------------------------------------- layers

F_rules.linear = function(x, w, ...)
  local o = opt_args(table.pack(...), { "bias" })
  local px, pw, pb = P(x), P(w), P(o.bias)
  local y = F.linear(px, pw, pb)
  local tx, tw, tb = T(x), T(w), T(o.bias)
  if tx == nil and tw == nil and tb == nil then return y end
  local t = tadd(tx and F.linear(tx, pw), tw and F.linear(px, tw))
  return dual(y, fit(tadd(t, tb), y))
end

-- a bias's tangent [C] as [C, 1, ...] (sd ones), added to an output [N, C, *S] or [C, *S]
local function channel_bias(tb, sd)
  local s = { -1 }
  for i = 1, sd do s[i + 1] = 1 end
  return tb:view(s)
end

local function conv_rule(name, names)
  return function(x, w, ...)
    local o = opt_args(table.pack(...), names)
    local args = {}
    for i = 2, #names do args[i - 1] = o[names[i]] end
    local n = #names - 1
    local px, pw = P(x), P(w)
    for i = 1, n do if is_dual(args[i]) then norule("F." .. name .. " with a dual option") end end
    local y = F[name](px, pw, P(o.bias), table.unpack(args, 1, n))
    local tx, tw, tb = T(x), T(w), T(o.bias)
    if tx == nil and tw == nil and tb == nil then return y end
    local t = tadd(tx and F[name](tx, pw, nil, table.unpack(args, 1, n)), tw and F[name](px, tw, nil, table.unpack(args, 1, n)))
    if tb ~= nil then t = tadd(t, channel_bias(tb, pw:dim() - 2)) end
    return dual(y, fit(t, y))
  end
end
local conv_names = { "bias", "stride", "padding", "dilation", "groups" }
local convt_names = { "bias", "stride", "padding", "output_padding", "groups", "dilation" }
for _, name in ipairs({ "conv1d", "conv2d", "conv3d" }) do F_rules[name] = conv_rule(name, conv_names) end
for _, name in ipairs({ "conv_transpose1d", "conv_transpose2d", "conv_transpose3d" }) do
  F_rules[name] = conv_rule(name, convt_names)
end

-- linear pools and resampling: the same op on the tangent
for _, name in ipairs({ "avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
  "adaptive_avg_pool3d", "pixel_shuffle", "pixel_unshuffle" }) do
  F_rules[name] = linear("F." .. name, function(x, ...) return F[name](x, ...) end)
end
F_rules.pad = function(x, pad, ...)
  local o = opt_args(table.pack(...), { "mode", "value" })
  if (o.mode or "constant") == "constant" then
    -- the padding's value is a constant: its tangent is zero
    local px = P(x)
    local y = F.pad(px, pad, "constant", o.value or 0)
    local t = T(x)
    if t == nil then return y end
    return dual(y, F.pad(t, pad, "constant", 0))
  end
  return linear("F.pad", function(v) return F.pad(v, pad, o.mode) end)(x)
end

-- max pools: the tangent at each window's argmax (the pool's indices into the flattened plane)
local function max_pool(name, names, sd)
  return function(x, ...)
    local o = opt_args(table.pack(...), names)
    local kw = {}
    for i = 2, #names do kw[names[i]] = o[names[i]] end
    local want = kw.return_indices
    kw.return_indices = true
    local px = P(x)
    local y, idx = F[name](px, o[names[1]], kw)
    local t = T(x)
    if t ~= nil then
      local flat_t = t:flatten(-sd)
      local tv = flat_t:gather(-1, idx:flatten(-sd)):view(y:size())
      y = dual(y, tv)
    end
    if want then return y, idx end
    return y
  end
end
local mp_names = { "kernel_size", "stride", "padding", "dilation", "ceil_mode", "return_indices" }
F_rules.max_pool1d = max_pool("max_pool1d", mp_names, 1)
F_rules.max_pool2d = max_pool("max_pool2d", mp_names, 2)
F_rules.max_pool3d = max_pool("max_pool3d", mp_names, 3)
F_rules.adaptive_max_pool1d = max_pool("adaptive_max_pool1d", { "output_size", "return_indices" }, 1)
F_rules.adaptive_max_pool2d = max_pool("adaptive_max_pool2d", { "output_size", "return_indices" }, 2)

F_rules.dropout = function(x, ...)
  local o = opt_args(table.pack(...), { "p", "training", "inplace" })
  local p, training = o.p or 0.5, o.training
  if training == nil then training = true end
  if not training or p == 0 then return x end
  local px = P(x)
  -- the mask of one dropout draw, applied to the primal and the tangent
  local mask = F.dropout(torch.ones_like(px), p, true)
  local t = T(x)
  local y = px * mask
  if t == nil then return y end
  return dual(y, t * mask)
end

-- normalization: x_hat = (x - mean) / sqrt(var + eps) over dims; its tangent is
-- (t - mean(t) - x_hat mean(t x_hat)) / sqrt(var + eps) when the statistics are x's own
local function normalized_tangent(t, xh, rstd, dims)
  return (t - t:mean(dims, true) - xh * (t * xh):mean(dims, true)) * rstd
end

-- y = x_hat * w + b: its tangent from x_hat's (t; nil: zero) and w's and b's; as(v) shapes a
-- weight or bias to broadcast against x_hat
local function affine_tangent(t, xh, pw, tw, tb, y, as)
  if t ~= nil and pw ~= nil then t = t * as(pw) end
  if tw ~= nil then t = tadd(t, xh * as(tw)) end
  if tb ~= nil then t = tadd(t, fit(as(tb), y)) end
  return dual(y, fit(t, y))
end

F_rules.batch_norm = function(x, ...)
  local o = opt_args(table.pack(...), { "running_mean", "running_var", "weight", "bias", "training", "momentum", "eps" })
  if is_dual(o.running_mean) or is_dual(o.running_var) then norule("batch_norm with dual running statistics") end
  local px, pw, pb = P(x), P(o.weight), P(o.bias)
  local eps = o.eps or 1e-5
  local training = o.training == true
  local y = F.batch_norm(px, o.running_mean, o.running_var, pw, pb, training, o.momentum or 0.1, eps)
  local tx, tw, tb = T(x), T(o.weight), T(o.bias)
  if tx == nil and tw == nil and tb == nil then return y end
  local shape = { 1, -1 }
  for i = 3, px:dim() do shape[i] = 1 end
  local xh, rstd
  local dims = { 0 }
  for i = 2, px:dim() - 1 do dims[#dims + 1] = i end
  if training or o.running_mean == nil then
    local mean = px:mean(dims, true)
    local var = px:var(dims, { correction = 0, keepdim = true })
    rstd = (var + eps):rsqrt()
    xh = (px - mean) * rstd
  else
    rstd = (o.running_var + eps):rsqrt():view(shape)
    xh = (px - o.running_mean:view(shape)) * rstd
  end
  local t = nil
  if tx ~= nil then t = (training or o.running_mean == nil) and normalized_tangent(tx, xh, rstd, dims) or tx * rstd end
  return affine_tangent(t, xh, pw, tw, tb, y, function(v) return v:view(shape) end)
end

F_rules.layer_norm = function(x, shape, ...)
  local o = opt_args(table.pack(...), { "weight", "bias", "eps" })
  local px, pw, pb = P(x), P(o.weight), P(o.bias)
  local eps = o.eps or 1e-5
  local y = F.layer_norm(px, shape, pw, pb, eps)
  local tx, tw, tb = T(x), T(o.weight), T(o.bias)
  if tx == nil and tw == nil and tb == nil then return y end
  local k = 1
  if type(shape) ~= "number" then k = #(getmetatable(shape) == nil and shape or shape:totable()) end
  local dims = {}
  for i = 1, k do dims[i] = px:dim() - k + i - 1 end
  local mean = px:mean(dims, true)
  local rstd = (px:var(dims, { correction = 0, keepdim = true }) + eps):rsqrt()
  local xh = (px - mean) * rstd
  local t = tx ~= nil and normalized_tangent(tx, xh, rstd, dims) or nil
  return affine_tangent(t, xh, pw, tw, tb, y, function(v) return v end)
end

-- ---------------------------------------------------------------- more reductions and products

-- the (dim, keepdim) of x:op(dim, keepdim) / x:op({dim =, keepdim =}); dim nil: all
local function dim_keep(name, a, from)
  local d, keep = a[from], a[from + 1]
  if is_kw(d) then d, keep = d.dim, d.keepdim end
  if is_kw(keep) then keep = keep.keepdim end
  if d ~= nil and math.type(d) ~= "integer" and type(d) ~= "table" then norule(name .. " with this dim") end
  return d, keep == true
end

-- v summed over dim (all dims when nil), keeping it when keep
local function sum_over(v, d, keep)
  if d == nil then return v:sum() end
  return v:sum(d, keep)
end

-- logsumexp(x, dim, keepdim): the tangent averaged by softmax(x) over dim
function methods.logsumexp(x, ...)
  local d, keep = dim_keep("logsumexp", table.pack(x, ...), 2)
  if d == nil then norule("logsumexp without a dim") end
  local p = P(x)
  local y = p:logsumexp(d, keep)
  local t = T(x)
  if t == nil then return y end
  return dual(y, sum_over(t * (p - p:logsumexp(d, true)):exp(), d, keep))
end

-- max / min over a dim: values (the tangent at the indices) and indices; amax / amin, and max /
-- min of all elements: the tangent averaged over the tied extremes
local function extreme(name)
  local base = (name == "max" or name == "amax") and "amax" or "amin"
  local whole = name == "max" or name == "min"
  return function(x, ...)
    local a = table.pack(x, ...)
    local p, t = P(x), T(x)
    if whole and a.n >= 2 then
      if is_tensorish(a[2]) then norule(name .. " of two tensors") end
      local d, keep = dim_keep(name, a, 2)
      local v, i = p[name](p, d, keep)
      if t == nil then return v, i end
      local tv = t:gather(d, keep and i or i:unsqueeze(d))
      return dual(v, keep and tv or tv:squeeze(d)), i
    end
    local d, keep = nil, false
    if a.n >= 2 then d, keep = dim_keep(name, a, 2) end
    local y
    if whole then y = p[name](p) elseif d == nil then y = p[base](p) else y = p[base](p, d, keep) end
    if t == nil then return y end
    local yk = (d == nil or keep) and y or p[base](p, d, true)
    local m = p:eq(yk):to(p.dtype)
    return dual(y, sum_over(t * m, d, keep) / sum_over(m, d, keep))
  end
end
for _, name in ipairs({ "amax", "amin", "max", "min" }) do methods[name] = extreme(name) end

-- norm(p = 2): <x, t> / |x| over dim (all dims when nil)
function methods.norm(x, ...)
  local a = table.pack(x, ...)
  local pw, d, keep = a[2], a[3], a[4]
  if is_kw(pw) then pw, d, keep = pw.p, pw.dim, pw.keepdim end
  if is_kw(d) then d, keep = d.dim, d.keepdim end
  if is_kw(keep) then keep = keep.keepdim end
  if pw ~= nil and pw ~= 2 and pw ~= "fro" then norule("norm with p other than 2") end
  keep = keep == true
  local p = P(x)
  local y = d == nil and p:norm() or p:norm(2, d, keep)
  local t = T(x)
  if t == nil then return y end
  return dual(y, sum_over(p * t, d, keep) / y)
end

-- var / std over dim with correction: 2 <x - mean, t> / (n - correction)
local function var_like(name)
  return function(x, ...)
    local a = table.pack(x, ...)
    local d, o = a[2], a[3]
    if is_kw(d) then d, o = d.dim, d end
    if a.n > 3 or (o ~= nil and not is_kw(o)) then norule(name .. " with positional options") end
    o = o or {}
    local p = P(x)
    local kw = { correction = o.correction, keepdim = o.keepdim }
    if o.unbiased ~= nil then kw.correction = o.unbiased and 1 or 0 end
    local c = kw.correction == nil and 1 or kw.correction
    local y = d == nil and p[name](p, { correction = c }) or p[name](p, d, { correction = c, keepdim = o.keepdim == true })
    local t = T(x)
    if t == nil then return y end
    local n = d == nil and p:numel() or p:numel() // p:mean(d, true):numel()
    local centred = d == nil and p - p:mean() or p - p:mean(d, true)
    local dv = sum_over(centred * t, d, o.keepdim == true) * (2 / (n - c))
    if name == "std" then dv = dv / (2 * y) end
    return dual(y, dv)
  end
end
methods.var, methods.std = var_like("var"), var_like("std")

-- einsum(equation, operands...): multilinear, one term a dual operand
local function einsum(eq, ...)
  local ops = table.pack(...)
  if ops.n == 1 and type(ops[1]) == "table" and getmetatable(ops[1]) == nil then ops = table.pack(table.unpack(ops[1])) end
  local ps = {}
  for i = 1, ops.n do ps[i] = P(ops[i]) end
  local y = torch.einsum(eq, table.unpack(ps, 1, ops.n))
  local t
  for i = 1, ops.n do
    local ti = T(ops[i])
    if ti ~= nil then
      local args = { table.unpack(ps, 1, ops.n) }
      args[i] = ti
      t = tadd(t, torch.einsum(eq, table.unpack(args, 1, ops.n)))
    end
  end
  return dual(y, t)
end

function methods.masked_fill(x, mask, value)
  if is_dual(mask) or is_dual(value) then norule("masked_fill with a dual mask or value") end
  local p = P(x)
  local y = p:masked_fill(mask, value)
  local t = T(x)
  if t == nil then return y end
  return dual(y, fit(t, y):masked_fill(mask, 0))
end

function methods.lerp(a, b, w)
  if is_tensorish(w) then norule("lerp with a tensor weight") end
  return methods.add(methods.mul(a, 1 - w), methods.mul(b, w))
end

-- addmm(input, mat1, mat2, {beta = 1, alpha = 1})
local function addmm(input, m1, m2, ...)
  local o = opt_args(table.pack(...), { "beta", "alpha" })
  local beta, alpha = o.beta or 1, o.alpha or 1
  if is_tensorish(beta) or is_tensorish(alpha) then norule("addmm with tensor beta or alpha") end
  local y = torch.addmm(P(input), P(m1), P(m2), { beta = beta, alpha = alpha })
  local ti, t1, t2 = T(input), T(m1), T(m2)
  if ti == nil and t1 == nil and t2 == nil then return y end
  local t = tadd(t1 and torch.mm(t1, P(m2)), t2 and torch.mm(P(m1), t2))
  if t ~= nil then t = t * alpha end
  return dual(y, fit(tadd(t, ti and ti * beta), y))
end
methods.addmm = addmm

F_rules.embedding = function(input, weight, ...)
  if is_dual(input) then norule("embedding with dual indices") end
  local o = opt_args(table.pack(...), { "padding_idx", "max_norm", "norm_type", "scale_grad_by_freq", "sparse" })
  if o.max_norm ~= nil then norule("embedding with max_norm (renormalises the weight in place)") end
  local y = F.embedding(input, P(weight), ...)
  local t = T(weight)
  if t == nil then return y end
  return dual(y, F.embedding(input, t))
end

F_rules.interpolate = linear("F.interpolate", function(v, ...) return F.interpolate(v, ...) end)
F_rules.upsample = linear("F.upsample", function(v, ...) return F.upsample(v, ...) end)

F_rules.group_norm = function(x, groups, ...)
  local o = opt_args(table.pack(...), { "weight", "bias", "eps" })
  local px, pw, pb = P(x), P(o.weight), P(o.bias)
  local eps = o.eps or 1e-5
  local y = F.group_norm(px, groups, pw, pb, eps)
  local tx, tw, tb = T(x), T(o.weight), T(o.bias)
  if tx == nil and tw == nil and tb == nil then return y end
  local N, C = px:size(0), px:size(1)
  local xg = px:reshape(N, groups, -1)
  local rstd = (xg:var(2, { correction = 0, keepdim = true }) + eps):rsqrt()
  local xh = ((xg - xg:mean(2, true)) * rstd):reshape(px:size())
  local shape = { 1, C }
  for i = 3, px:dim() do shape[i] = 1 end
  local t = tx ~= nil and normalized_tangent(tx:reshape(N, groups, -1), xh:reshape(N, groups, -1), rstd, 2):reshape(px:size()) or nil
  return affine_tangent(t, xh, pw, tw, tb, y, function(v) return v:view(shape) end)
end

-- attention as its products and softmax (their rules give the tangent)
F_rules.scaled_dot_product_attention = function(q, k, v, ...)
  local o = opt_args(table.pack(...), { "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa" })
  if (o.dropout_p or 0) ~= 0 then norule("scaled_dot_product_attention with dropout") end
  if o.enable_gqa then norule("scaled_dot_product_attention with enable_gqa") end
  if is_dual(o.attn_mask) then norule("scaled_dot_product_attention with a dual mask") end
  local pq, pk = P(q), P(k)
  local L, S = pq:size(-2), pk:size(-2)
  local scale = o.scale or 1 / math.sqrt(pq:size(-1))
  local scores = methods.mul(methods.matmul(q, methods.transpose(k, -2, -1)), scale)
  local mask = o.attn_mask
  if o.is_causal then mask = torch.ones(L, S, { dtype = torch.bool, device = pq.device }):tril() end
  if mask ~= nil then
    if mask.dtype == torch.bool then
      scores = methods.masked_fill(scores, mask:logical_not(), -math.huge)
    else
      scores = methods.add(scores, mask)
    end
  end
  return methods.matmul(F_rules.softmax(scores, -1), v)
end

-- torch.X(x, ...) with the method's rule
for _, name in ipairs({ "relu", "exp", "log", "tanh", "sigmoid", "sqrt", "rsqrt", "sin", "cos", "abs", "square",
  "reciprocal", "log1p", "expm1", "erf", "clamp", "clip", "pow", "add", "sub", "subtract", "mul", "multiply", "div",
  "divide", "true_divide", "rsub", "matmul", "mm", "bmm", "mv", "dot", "outer", "inner", "maximum", "minimum",
  "softmax", "log_softmax", "neg", "negative", "logsumexp", "amax", "amin", "max", "min", "norm", "var", "std",
  "masked_fill", "lerp", "addmm" }) do
  torch_names[#torch_names + 1] = name
end
for _, name in ipairs(FW.constant_names) do torch_names[#torch_names + 1] = name end
for _, name in ipairs(FW.linear_methods) do torch_names[#torch_names + 1] = name end
torch_rules.where = function(c, a, b) return methods.where(a, c, b) end
torch_rules.cat, torch_rules.concat, torch_rules.stack = list_op("cat"), list_op("cat"), list_op("stack")
torch_rules.einsum = einsum

-- a plain tensor's binary methods with a dual operand
FW.plain_binary = { "add", "sub", "mul", "div", "matmul", "mm", "bmm", "mv", "dot", "maximum", "minimum",
  "subtract", "multiply", "divide", "true_divide", "rsub", "outer", "inner", "gt", "lt", "ge", "le", "eq", "ne",
  "logical_and", "logical_or" }

return true
