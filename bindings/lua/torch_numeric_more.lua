-- More of torch's numeric functions, made of the ops (so autograd and every device come with
-- them): tensordot, cov, corrcoef, trapezoid (trapz), cumulative_trapezoid, logspace, the
-- hann / hamming / blackman / bartlett windows, gradient, nanquantile, histogram, aminmax,
-- addbmm, linalg.multi_dot and chain_matmul, cholesky_inverse, combinations, logaddexp2,
-- isposinf, isneginf, mvlgamma and frexp. Results PyTorch gives as a named tuple come back as
-- several values, as torch.max and torch.sort do here.
local torch = require "torch"
local U = require "nn_util"
local Tensor = torch.Tensor

local fail, check_tensor, wrap_dim = U.errorf, U.check_tensor, U.wrap_dim
local i64, f64 = torch.int64, torch.float64

local floating = { [torch.float32] = true, [torch.float64] = true, [torch.float16] = true, [torch.bfloat16] = true }
local type_name = U.scalar_name
local function on(x, dtype) return { dtype = dtype or x.dtype, device = x.device } end

-- start and length of t's slice [a, b) along dim, Python-style bounds (negative from the end)
local function slice(t, dim, a, b)
  local n = t:size(dim)
  a = a or 0
  b = b or n
  if a < 0 then a = math.max(a + n, 0) end
  if b < 0 then b = math.max(b + n, 0) end
  a, b = math.min(a, n), math.min(b, n)
  return t:narrow(dim, a, math.max(b - a, 0))
end

-- ---- products ----

-- tensordot(a, b, dims=2): dims an int (a's last dims against b's first) or {{dims of a}, {dims of b}}
function torch.tensordot(a, b, ...)
  check_tensor("tensordot", "a", 1, a)
  check_tensor("tensordot", "b", 2, b)
  local dims = U.parse("tensordot", { { "dims", 2 } }, ...).dims
  local da, db
  if torch.is_tensor(dims) then
    if dims:numel() == 1 then dims = dims:item() else
      local l = dims:tolist()
      dims = { l[1], l[2] }
    end
  end
  if type(dims) == "number" then
    local n = U.check_int("tensordot", "dims", dims)
    if n < 0 then fail("tensordot expects dims >= 0, but got dims=%d", n) end
    if n > a:dim() or n > b:dim() then fail("tensordot expects dims < ndim_a or ndim_b, but got dims=%d", n) end
    da, db = {}, {}
    for i = 1, n do da[i], db[i] = i - 1 - n, i - 1 end
  elseif type(dims) == "table" and #dims == 2 and type(dims[1]) == "table" and type(dims[2]) == "table" then
    da, db = dims[1], dims[2]
  else
    fail("tensordot: dims must be an int or a pair of lists of dims ({{dims of a}, {dims of b}}), got %s", U.pystr(dims))
  end
  if #da ~= #db then fail("both dimension lists should have same length") end
  if a.dtype ~= b.dtype then fail("both inputs should have same dtype") end
  local ca, cb, k = {}, {}, 1
  for i = 1, #da do
    local ia, ib = wrap_dim(da[i], a:dim()) + 1, wrap_dim(db[i], b:dim()) + 1
    if ca[ia] then fail("dim %d appears multiple times in the list of dims", ia - 1) end
    if cb[ib] then fail("dim %d appears multiple times in the list of dims", ib - 1) end
    if a:size(ia - 1) ~= b:size(ib - 1) then
      fail("contracted dimensions need to match, but first has size %d in dim %d and second has size %d in dim %d",
        a:size(ia - 1), da[i], b:size(ib - 1), db[i])
    end
    ca[ia], cb[ib], k = true, true, k * a:size(ia - 1)
  end
  -- a as [free, contracted] and b as [contracted, free], the contracted dims in dims' order
  local pa, pb, shape, fa, fb = {}, {}, {}, 1, 1
  for d = 1, a:dim() do if not ca[d] then pa[#pa + 1] = d - 1; shape[#shape + 1] = a:size(d - 1); fa = fa * a:size(d - 1) end end
  for i = 1, #da do pa[#pa + 1] = wrap_dim(da[i], a:dim()) end
  for i = 1, #db do pb[#pb + 1] = wrap_dim(db[i], b:dim()) end
  for d = 1, b:dim() do if not cb[d] then pb[#pb + 1] = d - 1; shape[#shape + 1] = b:size(d - 1); fb = fb * b:size(d - 1) end end
  local ma = (a:dim() > 0 and a:permute(pa) or a):reshape(fa, k)
  local mb = (b:dim() > 0 and b:permute(pb) or b):reshape(k, fb)
  return ma:mm(mb):reshape(shape)
end

-- addbmm(input, batch1, batch2, {beta=1, alpha=1}): beta * input + alpha * the sum over the
-- batch of batch1[i] @ batch2[i], as one product of [n, b*m] and [b*m, p]
local function addbmm(fname, input, ...)
  check_tensor(fname, "input", 1, input)
  local o = U.parse(fname, { { "batch1", U.REQUIRED }, { "batch2", U.REQUIRED }, { "beta", 1 }, { "alpha", 1 } }, ...)
  local b1 = check_tensor(fname, "batch1", 2, o.batch1)
  local b2 = check_tensor(fname, "batch2", 3, o.batch2)
  if b1:dim() ~= 3 then fail("batch1 must be a 3D tensor") end
  if b2:dim() ~= 3 then fail("batch2 must be a 3D tensor") end
  if b1:size(0) ~= b2:size(0) then
    fail("batch1 and batch2 must have same number of batches, got %d and %d", b1:size(0), b2:size(0))
  end
  if b1:size(2) ~= b2:size(1) then
    fail("Incompatible matrix sizes for bmm (%dx%d and %dx%d)", b1:size(1), b1:size(2), b2:size(1), b2:size(2))
  end
  local b, n, m, p = b1:size(0), b1:size(1), b1:size(2), b2:size(2)
  local m1 = b1:permute(1, 0, 2):reshape(n, b * m)
  return U.call(torch.addmm, input, m1, b2:reshape(b * m, p), { beta = o.beta, alpha = o.alpha })
end
function torch.addbmm(input, ...) return addbmm("addbmm", input, ...) end
function Tensor:addbmm(...) return addbmm("addbmm", self, ...) end
function Tensor:addbmm_(...)
  local args = table.pack(...)
  return U.maybe_inplace(self, function(s) return addbmm("addbmm_", s, table.unpack(args, 1, args.n)) end, true)
end

-- The cheapest order of a chain of products (the classic O(n^3) dynamic programme) as a tree
local function chain_order(dims)
  local n = #dims - 1
  local cost, split = {}, {}
  for i = 1, n do cost[i] = { [i] = 0 }; split[i] = {} end
  for len = 2, n do
    for i = 1, n - len + 1 do
      local j = i + len - 1
      cost[i][j] = math.huge
      for k = i, j - 1 do
        local c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
        if c < cost[i][j] then cost[i][j], split[i][j] = c, k end
      end
    end
  end
  return split
end

-- linalg.multi_dot({A, B, C, ...}): the product of the chain in its cheapest order; the first
-- and the last may be 1-D (a row and a column vector, dropped from the result)
local function multi_dot(fname, ts)
  local n = #ts
  if n < 2 then fail("%s(): expected at least 2 tensors but got %d", fname, n) end
  local ms, dims = {}, {}
  for i = 1, n do
    local t = ts[i]
    if not torch.is_tensor(t) then fail("%s(): tensor %d must be a Tensor, got %s", fname, i - 1, U.typename(t)) end
    if (i == 1 or i == n) and t:dim() ~= 1 and t:dim() ~= 2 then
      fail("%s(): the %s tensor must be 1D or 2D but got %dD", fname, i == 1 and "first" or "last", t:dim())
    elseif i > 1 and i < n and t:dim() ~= 2 then
      fail("%s(): tensor %d must be 2D but got %dD", fname, i - 1, t:dim())
    end
    if t.dtype ~= ts[1].dtype then
      fail("%s(): all tensors must have be the same dtype but tensor 0 is %s and tensor %d %s", fname,
        type_name(ts[1].dtype), i - 1, type_name(t.dtype))
    end
    ms[i] = t:dim() == 2 and t or (i == 1 and t:unsqueeze(0) or t:unsqueeze(1))
    if i > 1 and ms[i - 1]:size(1) ~= ms[i]:size(0) then
      fail("%s(): tensors %d and %d with shapes %s and %s cannot be multiplied", fname, i - 2, i - 1,
        U.shape_str(ms[i - 1]), U.shape_str(ms[i]))
    end
    dims[i] = ms[i]:size(0)
  end
  dims[n + 1] = ms[n]:size(1)
  local split = chain_order(dims)
  local function product(i, j)
    if i == j then return ms[i] end
    local k = split[i][j]
    return product(i, k):mm(product(k + 1, j))
  end
  local out = product(1, n)
  if ts[n]:dim() == 1 then out = out:squeeze(1) end
  if ts[1]:dim() == 1 then out = out:squeeze(0) end
  return out
end
torch.linalg = torch.linalg or {}
function torch.linalg.multi_dot(tensors)
  if type(tensors) ~= "table" or torch.is_tensor(tensors) then
    fail("linalg.multi_dot(): tensors must be a list of Tensors, got %s", U.typename(tensors))
  end
  return multi_dot("multi_dot", tensors)
end

-- chain_matmul(A, B, ...) (deprecated in PyTorch for linalg.multi_dot): 2-D matrices only
function torch.chain_matmul(...)
  local ts = table.pack(...)
  if ts.n == 0 then fail("chain_matmul(): Expected one or more matrices") end
  for i = 1, ts.n do
    check_tensor("chain_matmul", "matrices", i, ts[i])
    if ts[i]:dim() ~= 2 then fail("chain_matmul(): tensor %d has %d dimensions, expected 2", i - 1, ts[i]:dim()) end
  end
  if ts.n == 1 then return ts[1]:clone() end
  return multi_dot("multi_dot", ts)
end

-- cholesky_inverse(L, upper=false): (L Lᴴ)⁻¹, or (Uᴴ U)⁻¹ when upper; batches too
function torch.cholesky_inverse(L, ...)
  check_tensor("cholesky_inverse", "input", 1, L)
  local o = U.parse("cholesky_inverse", { { "upper", false } }, ...)
  if L:dim() < 2 then fail("cholesky_inverse: The input tensor A must have at least 2 dimensions.") end
  if L:size(-1) ~= L:size(-2) then
    fail("cholesky_inverse: A must be batches of square matrices, but they are %d by %d matrices", L:size(-2), L:size(-1))
  end
  if not floating[L.dtype] then fail("cholesky_inverse: expected a floating point tensor, got %s", type_name(L.dtype)) end
  if L:numel() == 0 then return L:clone() end
  local eye = torch.eye(L:size(-1), on(L)):expand(L:size())
  return U.call(torch.cholesky_solve, eye, L, { upper = o.upper })
end

-- ---- statistics ----

local function weights_check(w, name, nobs, integral)
  U.tensor_arg("cov", name, w)
  if w:dim() > 1 then fail("cov(): expected %s to have one or fewer dimensions but got %s with %d dimensions", name, name, w:dim()) end
  if integral and (floating[w.dtype] or w.dtype == torch.bool) then
    fail("cov(): expected %s to have integral dtype but got %s with %s dtype", name, name, type_name(w.dtype))
  elseif not integral and not floating[w.dtype] then
    fail("cov(): expected %s to have floating point dtype but got %s with %s dtype", name, name, type_name(w.dtype))
  end
  if w:numel() ~= nobs then
    fail("cov(): expected %s to have the same numel as there are observations in the input but got %d != %d", name, w:numel(), nobs)
  end
  if w:numel() > 0 and w:min():item() < 0 then fail("cov(): %s cannot be negative", name) end
  return w:reshape(-1)
end

-- cov(input, {correction=1, fweights=, aweights=}): rows are variables, columns observations
function torch.cov(input, ...)
  check_tensor("cov", "input", 1, input)
  local o = U.parse("cov", { { "correction", 1 }, { "fweights" }, { "aweights" } }, ...)
  local correction = U.check_int("cov", "correction", o.correction)
  if input:dim() > 2 then fail("cov(): expected input to have two or fewer dimensions but got an input with %d dimensions", input:dim()) end
  local x = input:dim() < 2 and input:reshape(1, -1) or input
  local nobs = x:size(1)
  local fw = o.fweights ~= nil and weights_check(o.fweights, "fweights", nobs, true)
  local aw = o.aweights ~= nil and weights_check(o.aweights, "aweights", nobs, false)
  local w = fw or aw or nil
  if fw and aw then w = fw * aw end
  local w_sum = w and w:sum() or nobs
  local avg = (w and x * w or x):sum(1) / w_sum
  local norm
  if w and aw and correction ~= 0 then norm = w_sum - (w * aw):sum() * correction / w_sum
  else norm = w_sum - correction end
  if (torch.is_tensor(norm) and norm:item() or norm) <= 0 then norm = 0 end -- PyTorch warns; inf / nan follow
  local xc = x - avg:unsqueeze(1)
  return (xc:mm((w and xc * w or xc):t()) / norm):squeeze()
end

-- corrcoef(input): Pearson's correlation of the rows, clipped to [-1, 1]
function torch.corrcoef(input)
  check_tensor("corrcoef", "input", 1, input)
  if input:dim() > 2 then fail("corrcoef(): expected input to have two or fewer dimensions but got an input with %d dimensions", input:dim()) end
  local c = torch.cov(input)
  if c:dim() == 0 then return c / c end
  local sd = c:diagonal():sqrt()
  return (c / sd:reshape(-1, 1) / sd:reshape(1, -1)):clamp(-1, 1)
end

-- x as seen along y's dim: a 1-D x laid along dim, a lower-dim x padded with leading 1s
local function spacing_of(fname, y, x, dim)
  if x:dim() == 1 then
    if x:size(0) ~= y:size(dim) then fail("%s: There must be one `x` value for each sample point", fname) end
    local shape = {}
    for d = 1, y:dim() do shape[d] = d - 1 == dim and x:size(0) or 1 end
    x = x:reshape(shape)
  elseif x:dim() < y:dim() then
    local shape = x:size():totable()
    while #shape < y:dim() do table.insert(shape, 1, 1) end
    x = x:reshape(shape)
  end
  return slice(x, dim, 1) - slice(x, dim, 0, -1)
end

local function trapezoid_args(fname, y, ...)
  check_tensor(fname, "y", 1, y)
  local o = U.parse(fname, { { "x" }, { "dx" }, { "dim", -1 } }, ...)
  if o.x ~= nil and o.dx ~= nil then fail("%s: give either x or dx, not both", fname) end
  if o.x ~= nil and not torch.is_tensor(o.x) then
    fail("%s: x must be a Tensor, got %s (a constant spacing goes as {dx=...})", fname, U.typename(o.x))
  end
  if o.dx ~= nil and type(o.dx) ~= "number" then fail("%s: dx must be a number, got %s", fname, U.typename(o.dx)) end
  local dim = wrap_dim(o.dim, y:dim())
  if y.dtype == torch.bool or (o.x ~= nil and o.x.dtype == torch.bool) then
    fail("%s: received a bool input for `%s`, but bool is not supported", fname, o.x ~= nil and "x` or `y" or "y")
  end
  return o, dim
end

-- trapezoid(y, x=nil, {dx=1, dim=-1}): the trapezoidal rule along dim (0 where y has no samples)
function torch.trapezoid(y, ...)
  local o, dim = trapezoid_args("trapezoid", y, ...)
  if y:size(dim) == 0 then
    local shape = y:size():totable()
    table.remove(shape, dim + 1)
    return torch.zeros(shape, on(y))
  end
  if o.x ~= nil then
    local dx = spacing_of("trapezoid", y, o.x, dim)
    return (dx * (slice(y, dim, 1) + slice(y, dim, 0, -1)) / 2):sum(dim)
  end
  return (y:sum(dim) - (y:select(dim, 0) + y:select(dim, -1 + y:size(dim))) * 0.5) * (o.dx or 1)
end
torch.trapz = torch.trapezoid

-- cumulative_trapezoid(y, x=nil, {dx=1, dim=-1}): the running trapezoidal rule (one fewer along dim)
function torch.cumulative_trapezoid(y, ...)
  local o, dim = trapezoid_args("cumulative_trapezoid", y, ...)
  local dx = o.x ~= nil and spacing_of("cumulative_trapezoid", y, o.x, dim) or (o.dx or 1)
  return (dx / 2 * (slice(y, dim, 0, -1) + slice(y, dim, 1))):cumsum(dim)
end

-- gradient(input, {spacing=1, dim=nil, edge_order=1}): a list of one tensor per dim, the
-- derivative estimated by central differences inside and one-sided ones (first or second
-- order) at the ends. spacing: a number, a list of numbers (one per dim) or a list of
-- coordinate tensors (1-D, one per dim).
function torch.gradient(input, ...)
  check_tensor("gradient", "input", 1, input)
  local o = U.parse("gradient", { { "spacing" }, { "dim" }, { "edge_order", 1 } }, ...)
  if input.dtype == torch.uint8 then fail("torch.gradient does not support uint8 input.") end
  local dims = o.dim
  if dims == nil then
    dims = {}
    for d = 1, input:dim() do dims[d] = d - 1 end
  elseif type(dims) == "number" then dims = { dims }
  end
  local spacing = o.spacing
  if torch.is_tensor(spacing) then spacing = { spacing } end
  if type(spacing) == "table" then
    if o.dim == nil and #spacing ~= input:dim() then
      fail("torch.gradient expected spacing to be unspecified, a scalar, or a list of length equal to 'self.dim() = %d', " ..
        "since dim argument was not given, but got a list of length %d", input:dim(), #spacing)
    elseif o.dim ~= nil and #spacing ~= #dims then
      fail("torch.gradient expected spacing to be unspecified, a scalar or it's spacing and dim arguments to have the same " ..
        "length, but got a spacing argument of length %d and a dim argument of length %d.", #spacing, #dims)
    end
  elseif spacing ~= nil and type(spacing) ~= "number" then
    fail("torch.gradient: spacing must be a number, a list of numbers or a list of Tensors, got %s", U.typename(spacing))
  end
  local edge = o.edge_order
  if edge ~= 1 and edge ~= 2 then fail("torch.gradient only supports edge_order=1 and edge_order=2.") end
  local seen = {}
  for i, d in ipairs(dims) do
    d = wrap_dim(d, input:dim())
    if seen[d] then fail("dim %d appears multiple times in the list of dims", d) end
    seen[d], dims[i] = true, d
    if input:size(d) < edge + 1 then fail("torch.gradient expected each dimension size to be at least edge_order+1") end
  end
  local out = {}
  for i, d in ipairs(dims) do
    local function s(a, b) return slice(input, d, a, b) end
    local h = type(spacing) == "table" and spacing[i] or spacing or 1
    local center, first, last
    if torch.is_tensor(h) then
      if h:dim() ~= 1 then
        fail("torch.gradient expected each element of spacing to have one dimension, but got an element with %d dimensions!", h:dim())
      end
      if h:size(0) ~= input:size(d) then
        fail("torch.gradient expected the coordinates along dim %d to have %d elements, but got %d", d, input:size(d), h:size(0))
      end
      local shape = {}
      for k = 1, input:dim() do shape[k] = k - 1 == d and -1 or 1 end
      local hx = h:diff()
      local dx1, dx2 = slice(hx, 0, 0, -1), slice(hx, 0, 1)
      local a = (-dx2 / (dx1 * (dx1 + dx2))):reshape(shape)
      local b = ((dx2 - dx1) / (dx1 * dx2)):reshape(shape)
      local c = (dx1 / (dx2 * (dx1 + dx2))):reshape(shape)
      center = a * s(0, -2) + b * s(1, -1) + c * s(2)
      local n = hx:size(0)
      local h0, h1, hl, hm = hx:narrow(0, 0, 1), hx:narrow(0, math.min(1, n - 1), 1), hx:narrow(0, n - 1, 1), hx:narrow(0, math.max(n - 2, 0), 1)
      if edge == 1 then
        first, last = (s(1, 2) - s(0, 1)) / h0, (s(-1) - s(-2, -1)) / hl
      else
        first = s(0, 1) * (-(h0 * 2 + h1) / (h0 * (h0 + h1))) + s(1, 2) * ((h0 + h1) / (h0 * h1)) + s(2, 3) * (-h0 / (h1 * (h0 + h1)))
        last = s(-3, -2) * (hl / (hm * (hl + hm))) + s(-2, -1) * (-(hl + hm) / (hl * hm)) + s(-1) * ((hl * 2 + hm) / (hl * (hl + hm)))
      end
    else
      if type(h) ~= "number" then fail("torch.gradient: spacing %d must be a number or a Tensor, got %s", i - 1, U.typename(h)) end
      center = (s(2) - s(0, -2)) / h / 2
      if edge == 1 then
        first, last = (s(1, 2) - s(0, 1)) / h, (s(-1) - s(-2, -1)) / h
      else
        first = (s(0, 1) * -1.5 + s(1, 2) * 2 - s(2, 3) * 0.5) / h
        last = (s(-3, -2) * 0.5 + s(-2, -1) * -2 + s(-1) * 1.5) / h
      end
    end
    out[i] = torch.cat({ first, center, last }, d)
  end
  return out
end

-- nanquantile(x, q, dim=nil, keepdim=false, {interpolation="linear"}): quantile of the values
-- that are not NaN (NaN where all are); q a number or a 1-D tensor (its values lead the result)
local interpolations = { linear = true, lower = true, higher = true, midpoint = true, nearest = true }
function torch.nanquantile(x, q, ...)
  check_tensor("nanquantile", "input", 1, x)
  local o = U.parse("nanquantile", { { "dim" }, { "keepdim", false }, { "interpolation", "linear" } }, ...)
  local interp = o.interpolation
  if x.dtype ~= torch.float32 and x.dtype ~= f64 then fail("nanquantile() input tensor must be either float or double dtype") end
  if x:numel() == 0 then fail("nanquantile() input tensor must be non-empty") end
  if torch.is_tensor(q) then
    if q:dim() > 1 then fail("nanquantile() q must be a scalar or 1D tensor") end
    if q.dtype ~= x.dtype then fail("nanquantile() q tensor must be same dtype as the input tensor") end
    if q:numel() > 0 and (q:lt(0):any():item() or q:gt(1):any():item()) then fail("nanquantile() q values must be in the range [0, 1]") end
  elseif type(q) ~= "number" then
    fail("nanquantile(): q must be a number or a Tensor, got %s", U.typename(q))
  elseif not (q >= 0 and q <= 1) then
    fail("nanquantile() q must be in the range [0, 1] but got %s", U.pyfloat(q + 0.0))
  end
  if not interpolations[interp] then
    fail("nanquantile() interpolation must be one of linear, lower, higher, midpoint or nearest, but got %s", tostring(interp))
  end
  local dim = o.dim ~= nil and wrap_dim(o.dim, x:dim()) or nil
  local data = (dim == nil or x:dim() == 0) and x:reshape(-1) or x:movedim(dim, -1)
  local sorted = data:sort(-1) -- NaN last
  local count = sorted:eq(sorted):sum(-1, true):to(x.dtype)
  local qs = torch.is_tensor(q) and q:reshape(-1) or torch.full({ 1 }, q, on(x))
  local ranks = (qs * (count - 1)):clamp(0) -- [..., Q]; rank 0 where all are NaN
  if interp == "lower" then ranks = ranks:floor()
  elseif interp == "higher" then ranks = ranks:ceil()
  elseif interp == "nearest" then ranks = ranks:round() end
  local below = ranks:floor()
  local v = sorted:gather(-1, below:to(i64))
  if interp == "linear" or interp == "midpoint" then
    local w = interp == "midpoint" and torch.full_like(ranks, 0.5) or ranks - below
    v = torch.lerp(v, sorted:gather(-1, ranks:ceil():to(i64)), w)
  end
  if o.keepdim and dim == nil then
    local shape = {}
    for d = 1, x:dim() do shape[d] = 1 end
    shape[#shape + 1] = qs:numel()
    v = v:reshape(shape)
  elseif o.keepdim and x:dim() > 0 then
    v = v:unsqueeze(dim) -- [..., Q] keeps q last
  end
  if torch.is_tensor(q) and q:dim() == 1 then return v:movedim(-1, 0) end
  return v:squeeze(-1)
end

-- histogram(input, bins (an int or a tensor of edges), {range=, weight=, density=false}) -> hist,
-- bin_edges. Bins are [e_i, e_i+1) but the last is closed; values outside the edges are dropped.
function torch.histogram(input, bins, ...)
  check_tensor("histogram", "input", 1, input)
  local o = U.parse("histogram", { { "range" }, { "weight" }, { "density", false } }, ...)
  if not floating[input.dtype] then fail("\"histogram\" not implemented for '%s'", type_name(input.dtype)) end
  local x = input:detach():reshape(-1)
  local edges
  if torch.is_tensor(bins) then
    if o.range ~= nil then fail("torch.histogram(): range cannot be given with a tensor of bin edges") end
    if bins:dim() ~= 1 then
      fail("torch.histogram: bins tensor should have one dimension, but got %d dimensions in the bins tensor", bins:dim())
    end
    if bins:numel() == 0 then fail("torch.histogram: bins tensor should have at least 1 element, but got 0 elements in the bins tensor") end
    if bins.dtype ~= x.dtype then
      fail("torch.histogram: input tensor and bins tensors should have the same dtype, but got input with dtype %s and bins with dtype %s",
        type_name(x.dtype), type_name(bins.dtype))
    end
    if bins:numel() == 1 then fail("torch.histogram(): bins must be > 0, but got 0 for dimension 0") end
    edges = bins:detach()
  else
    local n = U.check_int("histogram", "bins", bins)
    if n <= 0 then fail("torch.histogram(): bins must be > 0, but got %d for dimension 0", n) end
    local lo, hi = 0.0, 1.0
    if o.range ~= nil then
      local r = o.range
      if type(r) ~= "table" or #r ~= 2 or type(r[1]) ~= "number" or type(r[2]) ~= "number" then
        fail("torch.histogram(): range must be a list of two numbers {min, max}, got %s", U.typename(r))
      end
      lo, hi = r[1], r[2]
    elseif x:numel() > 0 then
      lo, hi = x:min():item(), x:max():item()
    end
    if lo ~= lo or hi ~= hi or math.abs(lo) == math.huge or math.abs(hi) == math.huge then
      fail("torch.histogram: range [%s, %s] is not finite", U.pyfloat(lo + 0.0), U.pyfloat(hi + 0.0))
    end
    if lo > hi then fail("torch.histogram: min should not exceed max, but got min %s max %s", U.pyfloat(lo + 0.0), U.pyfloat(hi + 0.0)) end
    if lo == hi then lo, hi = lo - 0.5, hi + 0.5 end
    edges = torch.linspace(lo, hi, n + 1, on(x))
  end
  local w = o.weight
  if w ~= nil then
    check_tensor("histogram", "weight", 3, w)
    if U.shape_str(w) ~= U.shape_str(input) then
      fail("torch.histogram: weight should have the same shape as the input, but got input with shape %s and weight with shape %s",
        U.shape_str(input), U.shape_str(w))
    end
    if w.dtype ~= x.dtype then
      fail("torch.histogram: input tensor and weight tensor should have the same dtype, but got input(%s), and weight(%s)",
        type_name(x.dtype), type_name(w.dtype))
    end
    w = w:detach():reshape(-1)
  end
  local nb = edges:numel() - 1
  local inside = x:ge(edges[0]):logical_and(x:le(edges[nb]))
  local v = x:masked_select(inside)
  -- the bin: how many edges are <= v (std::upper_bound, by bisection), less one; the right
  -- edge falls in the last bin
  local lo = torch.zeros(v:numel(), on(v, i64))
  local hi = torch.full({ v:numel() }, nb + 1, on(v, i64))
  for _ = 0, math.floor(math.log(nb + 1, 2) + 1e-9) do
    local mid = (lo + hi) // 2
    local active = lo:lt(hi)
    local go = edges:gather(0, mid:clamp(0, nb)):le(v)
    lo = torch.where(active:logical_and(go), mid + 1, lo)
    hi = torch.where(active:logical_and(go:logical_not()), mid, hi)
  end
  local pos = (lo - 1):clamp(0, nb - 1)
  local hist = torch.zeros(nb, on(x)):index_add_(0, pos, w and w:masked_select(inside) or torch.ones(v:numel(), on(x)))
  if o.density then hist = hist / (hist:sum() * edges:diff()) end
  return hist, edges
end

-- aminmax(input, {dim=nil, keepdim=false}) -> min, max
function torch.aminmax(x, ...)
  check_tensor("aminmax", "input", 1, x)
  local o = U.parse("aminmax", { { "dim" }, { "keepdim", false } }, ...)
  if o.dim == nil then
    if x:numel() == 0 then fail("aminmax(): cannot compute aminmax over an empty dimension as the operation has no identity.") end
    local lo, hi = x:amin(), x:amax()
    if o.keepdim then
      local ones = {}
      for d = 1, x:dim() do ones[d] = 1 end
      lo, hi = lo:reshape(ones), hi:reshape(ones)
    end
    return lo, hi
  end
  local dim = wrap_dim(o.dim, x:dim())
  if x:dim() == 0 then return x:clone(), x:clone() end
  if x:size(dim) == 0 then fail("aminmax(): Expected reduction dim %d to have non-zero size.", dim) end
  return x:amin(dim, o.keepdim), x:amax(dim, o.keepdim)
end

-- ---- creation ----

-- logspace(start, end, steps, base=10, {dtype=, device=, requires_grad=}): base ^ linspace
function torch.logspace(start, stop, steps, ...)
  local o = U.parse("logspace", { { "base", 10.0 }, { "dtype" }, { "device" }, { "requires_grad", false } }, ...)
  if torch.is_tensor(start) then start = start:item() end
  if torch.is_tensor(stop) then stop = stop:item() end
  steps = U.check_int("logspace", "steps", steps)
  if steps < 0 then fail("number of steps must be non-negative") end
  local e = torch.linspace(start, stop, steps, { dtype = f64, device = o.device })
  local r = torch.pow(o.base, e):to(o.dtype or torch.get_default_dtype())
  if o.requires_grad then r:requires_grad_() end
  return r
end

-- A window of n points (periodic: the first n of n + 1), computed in float64 from k = 0..N-1
local function window(fname, spec, f, ...)
  local o = U.parse(fname, spec, ...)
  local dtype = o.dtype or torch.get_default_dtype()
  if not floating[dtype] then fail("%s expects floating point dtypes, got: %s", fname, tostring(dtype)) end
  local n = U.check_int(fname, "window_length", o.window_length)
  if n < 0 then fail("%s requires non-negative window_length, got window_length=%d", fname, n) end
  local opts = { dtype = dtype, device = o.device }
  local w
  if n <= 1 then w = torch.ones(n, opts)
  else
    local N = o.periodic and n + 1 or n
    w = f(torch.arange(N, { dtype = f64, device = o.device }), N, o):narrow(0, 0, n):to(dtype)
  end
  if o.requires_grad then w:requires_grad_() end
  return w
end

local function window_spec(extra)
  local spec = { { "window_length", U.REQUIRED }, { "periodic", true } }
  for _, e in ipairs(extra) do spec[#spec + 1] = e end
  for _, k in ipairs({ "dtype", "device", "requires_grad" }) do spec[#spec + 1] = { k } end
  return spec
end

local function hamming(k, N, o) return (k * (2 * math.pi / (N - 1))):cos() * -o.beta + o.alpha end

function torch.hamming_window(...)
  return window("hamming_window", window_spec({ { "alpha", 0.54 }, { "beta", 0.46 } }), hamming, ...)
end
function torch.hann_window(...)
  return window("hann_window", window_spec({}), function(k, N) return hamming(k, N, { alpha = 0.5, beta = 0.5 }) end, ...)
end
function torch.blackman_window(...)
  return window("blackman_window", window_spec({}), function(k, N)
    local a = k * (math.pi / (N - 1))
    return (a * 4):cos() * 0.08 - (a * 2):cos() * 0.5 + 0.42
  end, ...)
end
function torch.bartlett_window(...)
  return window("bartlett_window", window_spec({}), function(k, N)
    local a = k * (2 / (N - 1))
    return torch.where(k:le((N - 1) // 2), a, 2 - a)
  end, ...)
end

-- combinations(input, r=2, with_replacement=false): the r-length combinations of a 1-D
-- tensor's elements, in itertools' (lexicographic) order, one per row
function torch.combinations(input, ...)
  check_tensor("combinations", "input", 1, input)
  local o = U.parse("combinations", { { "r", 2 }, { "with_replacement", false } }, ...)
  if input:dim() ~= 1 then fail("Expect a 1D vector, but got shape %s", U.shape_str(input)) end
  local r = U.check_int("combinations", "r", o.r)
  if r < 0 then fail("Expect a non-negative number, but got %d", r) end
  if r == 0 then return torch.empty(0, on(input)) end
  local n, idx, cur = input:size(0), {}, {}
  local function walk(pos, from)
    if pos > r then
      table.move(cur, 1, r, #idx + 1, idx)
      return
    end
    for i = from, n - 1 do
      cur[pos] = i
      walk(pos + 1, o.with_replacement and i or i + 1)
    end
  end
  walk(1, 0)
  local index = torch.tensor(idx, { dtype = i64 }):to(input.device)
  return input:index_select(0, index):reshape(#idx // r, r)
end

-- ---- elementwise ----

local function operand(fname, name, v)
  if type(v) == "number" then v = torch.tensor(v + 0.0) end
  if not torch.is_tensor(v) then fail("%s: %s must be a Tensor or a number, got %s", fname, name, U.typename(v)) end
  if not floating[v.dtype] then fail("%s(): expected floating point inputs, but %s is %s", fname, name, type_name(v.dtype)) end
  return v
end

-- logaddexp2(a, b) = log2(2^a + 2^b), without overflow
function torch.logaddexp2(a, b)
  a, b = operand("logaddexp2", "input", a), operand("logaddexp2", "other", b)
  U.check_broadcast(a, b)
  local m = torch.maximum(a, b)
  local same_inf = a:eq(b):logical_and(m:abs():eq(math.huge))
  return torch.where(same_inf, m, m + torch.exp2(-(a - b):abs()):log1p() / math.log(2))
end

function torch.isposinf(x) return check_tensor("isposinf", "input", 1, x):eq(math.huge) end
function torch.isneginf(x) return check_tensor("isneginf", "input", 1, x):eq(-math.huge) end

-- mvlgamma(input, p): log of the multivariate gamma function of dimension p
function torch.mvlgamma(x, p)
  check_tensor("mvlgamma", "input", 1, x)
  if x.dtype == torch.bool then fail("The input tensor may not be a boolean tensor.") end
  p = U.check_int("mvlgamma", "p", p)
  if p < 1 then fail("p has to be greater than or equal to 1") end
  local dtype = floating[x.dtype] and x.dtype or torch.get_default_dtype()
  local shifts = torch.arange(p, on(x, dtype)) * 0.5 - (p - 1) * 0.5 -- -(p-1)/2 .. 0
  return (x:unsqueeze(-1) + shifts):lgamma():sum(-1) + p * (p - 1) * math.log(math.pi) / 4
end
function Tensor:mvlgamma_(p) return U.maybe_inplace(self, function(s) return torch.mvlgamma(s, p) end, true) end

-- frexp(input) -> mantissa, exponent: input = mantissa * 2^exponent, |mantissa| in [0.5, 1)
-- (0, inf and nan keep their value with exponent 0), exponent int32. Found in float64 from
-- log2, then put right by one step where log2 rounded; 2^-e goes in two halves so that
-- neither overflows.
function torch.frexp(x)
  check_tensor("frexp", "input", 1, x)
  if not floating[x.dtype] then fail("torch.frexp() only supports floating-point dtypes") end
  local e
  do
    local _ <close> = torch.no_grad()
    local a = x:detach():to(f64):abs()
    local finite = a:gt(0):logical_and(a:lt(math.huge))
    e = torch.where(finite, a:log2():floor() + 1, torch.zeros_like(a))
    local m = a * torch.exp2(-(e / 2):floor()) * torch.exp2((e / 2):floor() - e)
    e = e + m:ge(1):logical_and(finite):to(f64) - m:lt(0.5):logical_and(finite):to(f64)
  end
  local h = (e / 2):floor()
  local mantissa = (x:to(f64) * torch.exp2(-h) * torch.exp2(h - e)):to(x.dtype)
  return mantissa, e:to(torch.int32)
end

-- the errors of the ops inside raised under the function's name
for _, name in ipairs({ "trapezoid", "trapz", "cumulative_trapezoid", "logspace" }) do
  local f = torch[name]
  torch[name] = function(...) return U.call_as(name, f, ...) end
end

for _, name in ipairs({ "cov", "corrcoef", "nanquantile", "histogram", "aminmax", "cholesky_inverse", "logaddexp2",
  "isposinf", "isneginf", "mvlgamma", "frexp" }) do
  Tensor[name] = torch[name]
end

return torch
