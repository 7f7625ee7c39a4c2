-- More of PyTorch's functions, made of the tensor ops (so autograd and every device come
-- with them): kron, block_diag, rot90, vander, logcumsumexp, cummax, cummin, histc, mode,
-- nanmedian, scatter_reduce / scatter_reduce_; torch.testing.assert_close;
-- torch.autograd.gradcheck; torch.autograd.functional.jacobian / vjp / jvp / hessian / hvp / vhp
-- (create_graph=true keeps the results differentiable).
local torch = require "torch"
local U = require "nn_util"
local Tensor = torch.Tensor

local fail = U.errorf
local i64 = torch.int64

local check_tensor = U.check_tensor

local wrap_dim = U.wrap_dim

local pytype_name = U.scalar_name

-- ---- products and shapes ----

-- kron(a, b): a's dims and b's padded with leading 1s; entry (i*bs + j) = a[i] * b[j] per dim
function torch.kron(a, b)
  check_tensor("kron", "input", 1, a)
  check_tensor("kron", "other", 2, b)
  local nd = math.max(a:dim(), b:dim())
  local as, bs = a:size():totable(), b:size():totable()
  while #as < nd do table.insert(as, 1, 1) end
  while #bs < nd do table.insert(bs, 1, 1) end
  local av, bv, out = {}, {}, {}
  for d = 1, nd do
    av[#av + 1], av[#av + 2] = as[d], 1
    bv[#bv + 1], bv[#bv + 2] = 1, bs[d]
    out[d] = as[d] * bs[d]
  end
  if nd == 0 then return a * b end
  return (a:reshape(av) * b:reshape(bv)):reshape(out)
end

-- block_diag(t1, t2, ...) or block_diag({t1, ...}): 0-d and 1-d inputs count as 1 x n blocks
function torch.block_diag(...)
  local ts = table.pack(...)
  if ts.n == 1 and type(ts[1]) == "table" and not torch.is_tensor(ts[1]) then ts = table.pack(table.unpack(ts[1])) end
  if ts.n == 0 then return torch.empty(1, 0) end
  for i = 1, ts.n do -- PyTorch's parser for its TensorList
    if not torch.is_tensor(ts[i]) then U.errorf("expected Tensor as element %d in argument 0, but got %s", i - 1, U.typename(ts[i])) end
  end
  local blocks, rows, cols = {}, 0, 0
  local dtype_probe = ts[1]:reshape(-1):narrow(0, 0, 0)
  for i = 1, ts.n do
    local t = check_tensor("block_diag", "tensors", 1, ts[i])
    if t:dim() > 2 then
      fail("torch.block_diag: Input tensors must have 2 or fewer dimensions. Input %d has %d dimensions", i - 1, t:dim())
    end
    t = t:dim() == 2 and t or t:reshape(1, -1)
    blocks[i] = t
    rows, cols = rows + t:size(0), cols + t:size(1)
    dtype_probe = dtype_probe + t:reshape(-1):narrow(0, 0, 0)
  end
  local dtype, device = dtype_probe.dtype, ts[1].device
  local bands, left = {}, 0
  for i, t in ipairs(blocks) do
    local r, c = t:size(0), t:size(1)
    local parts = {}
    if left > 0 then parts[#parts + 1] = torch.zeros(r, left, { dtype = dtype, device = device }) end
    parts[#parts + 1] = t:to(dtype)
    if cols - left - c > 0 then parts[#parts + 1] = torch.zeros(r, cols - left - c, { dtype = dtype, device = device }) end
    bands[i] = #parts == 1 and parts[1] or torch.cat(parts, 1)
    left = left + c
  end
  return torch.cat(bands, 0)
end

-- rot90(x, k=1, dims={0, 1}): k quarter turns from the first dim towards the second
function torch.rot90(x, ...)
  check_tensor("rot90", "input", 1, x)
  local o = U.parse("rot90", { { "k", 1 }, { "dims", { 0, 1 } } }, ...)
  local dims, nd = o.dims, x:dim()
  if #dims ~= 2 then fail("expected total rotation dims == 2, but got dims = %d", #dims) end
  if nd < 2 then fail("expected total dims >= 2, but got total dims = %d", nd) end
  if dims[1] == dims[2] or math.abs(dims[1] - dims[2]) == nd then
    fail("expected rotation dims to be different, but got dim0 = %d and dim1 = %d", dims[1], dims[2])
  end
  if dims[1] >= nd or dims[1] < -nd then fail("Rotation dim0 out of range, dim0 = %d", dims[1]) end
  if dims[2] >= nd or dims[2] < -nd then fail("Rotation dim1 out of range, dim1 = %d", dims[2]) end
  local k = U.check_int("rot90", "k", o.k) % 4
  if k == 1 then return x:flip({ dims[2] }):transpose(dims[1], dims[2]) end
  if k == 2 then return x:flip(dims) end
  if k == 3 then return x:flip({ dims[1] }):transpose(dims[1], dims[2]) end
  return x:clone()
end

-- vander(x, N=len(x), increasing=false): columns x^(N-1) .. x^0 (or x^0 .. x^(N-1));
-- integer and bool inputs give int64
function torch.vander(x, ...)
  check_tensor("vander", "x", 1, x)
  local o = U.parse("vander", { { "N" }, { "increasing", false } }, ...)
  if x:dim() ~= 1 then fail("x must be a one-dimensional tensor.") end
  local n = o.N == nil and x:size(0) or o.N
  if n < 0 then fail("N must be non-negative.") end
  if not x:is_floating_point() then x = x:to(i64) end
  local cols = { torch.ones(x:size(0), 1, { dtype = x.dtype, device = x.device }) }
  local col = x:unsqueeze(1)
  for p = 1, n - 1 do
    cols[#cols + 1] = col
    if p < n - 1 then col = col * x:unsqueeze(1) end
  end
  local out = n == 0 and torch.empty(x:size(0), 0, { dtype = x.dtype, device = x.device }) or torch.cat(cols, 1)
  if not o.increasing and n > 1 then out = out:flip({ 1 }) end
  return out
end

-- ---- scans ----

-- Hillis-Steele inclusive scan along dim: after the step with shift s, entry i combines
-- entries (i - 2s, i]; combine(L, R, Lrest, Rrest) gets the earlier and the later part.
local function scan(xs, dim, combine)
  local n = xs[1]:size(dim)
  local s = 1
  while s < n do
    local L, R = {}, {}
    for i, t in ipairs(xs) do L[i], R[i] = t:narrow(dim, 0, n - s), t:narrow(dim, s, n - s) end
    local new = table.pack(combine(L, R))
    for i, t in ipairs(xs) do xs[i] = torch.cat({ t:narrow(dim, 0, s), new[i] }, dim) end
    s = s * 2
  end
  return xs
end

-- logcumsumexp(x, dim): log of the running sum of exp, as a scan of pairwise logaddexp
-- (each pair shifted by its own max, so no term under- or overflows)
function torch.logcumsumexp(x, dim)
  check_tensor("logcumsumexp", "input", 1, x)
  if dim == nil then fail("logcumsumexp() missing 1 required positional arguments: \"dim\"") end
  dim = wrap_dim(dim, x:dim())
  if not x:is_floating_point() then fail("\"logcumsumexp_out_cpu\" not implemented for '%s'", pytype_name(x.dtype)) end
  if x:dim() == 0 or x:size(dim) <= 1 then return x:clone() end
  return scan({ x }, dim, function(L, R)
    local a, b = L[1], R[1]
    local m = torch.maximum(a, b):detach()
    -- both -inf: -inf out, and a zero gradient instead of 0 * inf
    local empty = m:eq(-math.huge)
    local zero = torch.zeros_like(m)
    a, b = torch.where(empty, zero, a), torch.where(empty, zero, b)
    m = torch.where(m:isfinite(), m, zero)
    return torch.where(empty, zero - math.huge, ((a - m):exp() + (b - m):exp()):log() + m)
  end)[1]
end

-- cummax / cummin(x, dim) -> values, indices: ties go to the later index and a NaN,
-- once seen, stays (the latest NaN's index), as PyTorch's kernels do
local function cum_extreme(fname, better)
  return function(x, dim)
    check_tensor(fname, "input", 1, x)
    dim = wrap_dim(dim, x:dim())
    if x:dim() == 0 then return x:clone(), torch.zeros({}, { dtype = i64, device = x.device }) end
    local n = x:size(dim)
    local shape = {}
    for d = 0, x:dim() - 1 do shape[d + 1] = d == dim and n or 1 end
    local idx = torch.arange(n, { dtype = i64, device = x.device }):reshape(shape):expand(x:size()):contiguous()
    if n > 1 then
      local v = x:detach()
      idx = scan({ v, idx }, dim, function(L, R)
        local lv, rv = L[1], R[1]
        local take_left = better(lv, rv)
        if x:is_floating_point() then
          local lnan, rnan = lv:ne(lv), rv:ne(rv)
          take_left = rnan:logical_not():logical_and(lnan:logical_or(take_left))
        end
        return torch.where(take_left, lv, rv), torch.where(take_left, L[2], R[2])
      end)[2]
    end
    return x:gather(dim, idx), idx
  end
end
torch.cummax = cum_extreme("cummax", Tensor.gt)
torch.cummin = cum_extreme("cummin", Tensor.lt)

-- ---- counting ----

-- histc(x, bins=100, min=0, max=0): equal-width bins over [min, max] (the data's range when
-- min == max); values outside are ignored, max itself counts in the last bin
function torch.histc(x, ...)
  check_tensor("histc", "input", 1, x)
  local o = U.parse("histc", { { "bins", 100 }, { "min", 0 }, { "max", 0 } }, ...)
  if not x:is_floating_point() then fail("\"histogram_cpu\" not implemented for '%s'", pytype_name(x.dtype)) end
  local bins = U.check_int("histc", "bins", o.bins)
  if bins <= 0 then fail("torch.histc(): bins must be > 0, but got %d for dimension 0", bins) end
  local lo, hi = o.min, o.max
  if lo == hi and x:numel() > 0 then lo, hi = x:min():item(), x:max():item() end
  if lo == hi then lo, hi = lo - 1, hi + 1 end
  if lo ~= lo or hi ~= hi or math.abs(lo) == math.huge or math.abs(hi) == math.huge then
    fail("torch.histc(): range of [%s, %s] is not finite", U.pyfloat(lo + 0.0), U.pyfloat(hi + 0.0))
  end
  if lo > hi then fail("torch.histc(): max must be larger than min") end
  local flat = x:detach():reshape(-1)
  local inside = flat:ge(lo):logical_and(flat:le(hi))
  local v = flat:masked_select(inside)
  local pos = ((v - lo) / (hi - lo) * bins):floor():to(i64):clamp(0, bins - 1)
  return torch.zeros(bins, { dtype = x.dtype, device = x.device })
    :index_add_(0, pos, torch.ones(pos:numel(), { dtype = x.dtype, device = x.device }))
end

local function finish_reduce(x, dim, values, idx, keepdim)
  if x:dim() == 0 then return values:reshape({}), idx:reshape({}) end
  if not keepdim then return values:squeeze(dim), idx:squeeze(dim) end
  return values, idx
end

-- mode(x, dim=-1, keepdim=false) -> values, indices: the smallest of the most frequent
-- values and its last position (counts from an n x n comparison per slice)
function torch.mode(x, ...)
  check_tensor("mode", "input", 1, x)
  local o = U.parse("mode", { { "dim", -1 }, { "keepdim", false } }, ...)
  local dim = wrap_dim(o.dim, x:dim())
  if x:dim() == 0 then return x:clone(), torch.zeros({}, { dtype = i64, device = x.device }) end
  local n = x:size(dim)
  if n == 0 then fail("mode(): Expected reduction dim %d to have non-zero size.", dim) end
  local xm = x:detach():movedim(dim, -1)
  local cnt = xm:unsqueeze(-1):eq(xm:unsqueeze(-2)):sum(-1)
  local sorted, perm = xm:sort(-1)
  local scnt = cnt:gather(-1, perm)
  local rank = torch.arange(n, 0, -1, { dtype = i64, device = x.device }) -- n .. 1: earlier sorted wins
  local first = n - (scnt:eq(scnt:amax(-1, true)):to(i64) * rank):amax(-1, true)
  local value = sorted:gather(-1, first)
  local pos = torch.arange(1, n + 1, { dtype = i64, device = x.device })
  local idx = (xm:eq(value):to(i64) * pos):amax(-1, true) - 1
  idx = idx:movedim(-1, dim)
  return finish_reduce(x, dim, x:gather(dim, idx), idx, o.keepdim)
end

-- nanmedian(x) / nanmedian(x, dim, keepdim=false): the lower median of the non-NaN values
-- (NaN where all are NaN); NaN sorts last, so the k non-NaN ones come first
function torch.nanmedian(x, ...)
  check_tensor("nanmedian", "input", 1, x)
  if not x:is_floating_point() then return torch.median(x, ...) end
  local o = U.parse("nanmedian", { { "dim" }, { "keepdim", false } }, ...)
  local whole = o.dim == nil
  local src = whole and x:reshape(-1) or x
  if whole and x:numel() == 0 then fail("nanmedian() input tensor cannot be empty") end
  local dim = whole and 0 or wrap_dim(o.dim, x:dim())
  if src:dim() == 0 then src = src:reshape(1) end
  if src:size(dim) == 0 then fail("nanmedian(): Expected reduction dim %d to have non-zero size.", dim) end
  local order = torch._argsort(src, dim, false)
  local k = src:eq(src):sum(dim, true):to(i64)
  local at = ((k - 1):clamp(0) / 2):floor():to(i64)
  local idx = order:gather(dim, at)
  if whole then return src:gather(0, idx):reshape({}) end
  return finish_reduce(x, dim, src:gather(dim, idx), idx, o.keepdim)
end

-- ---- scatter_reduce ----

local reductions = { sum = true, prod = true, mean = true, amax = true, amin = true }

-- self:scatter_reduce(dim, index, src, reduce, include_self=true): src[...] (over index's
-- shape) reduced into self at index along dim. Sum and mean by index_add; prod / amax /
-- amin by a segmented scan over the entries sorted by target position.
local function scatter_reduce(self, ...)
  local o = U.parse("scatter_reduce", { { "dim", U.REQUIRED }, { "index", U.REQUIRED }, { "src", U.REQUIRED },
    { "reduce", U.REQUIRED }, { "include_self", true } }, ...)
  local index, src, reduce = o.index, o.src, o.reduce
  check_tensor("scatter_reduce", "index", 2, index)
  check_tensor("scatter_reduce", "src", 3, src)
  if not reductions[reduce] then
    fail("reduce argument must be either sum, prod, mean, amax or amin, got %s", tostring(reduce))
  end
  if index.dtype ~= i64 then fail("scatter_reduce(): Expected dtype int64 for index") end
  if src.dtype ~= self.dtype then fail("scatter(): Expected self.dtype to be equal to src.dtype") end
  local nd = math.max(self:dim(), 1)
  local dim = wrap_dim(o.dim, self:dim())
  if math.max(index:dim(), 1) ~= nd or math.max(src:dim(), 1) ~= nd then
    fail("Index tensor must have the same number of dimensions as self tensor")
  end
  local sizes = self:dim() == 0 and { 1 } or self:size():totable()
  local ishape = index:dim() == 0 and { 1 } or index:size():totable()
  local sshape = src:dim() == 0 and { 1 } or src:size():totable()
  for d = 1, nd do
    if ishape[d] > sshape[d] or (d - 1 ~= dim and ishape[d] > sizes[d]) then
      fail("Expected index %s to be smaller than self %s apart from dimension %d and to be smaller size than src %s",
        U.shape_str(index), U.shape_str(self), dim, U.shape_str(src))
    end
  end
  local idx = index:reshape(ishape)
  if not index.is_cuda and idx:numel() > 0 then
    local bad = idx:lt(0):logical_or(idx:ge(sizes[dim + 1]))
    if bad:any():item() then
      fail("index %d is out of bounds for dimension %d with size %d", idx:masked_select(bad)[0]:item(), dim, sizes[dim + 1])
    end
  end
  -- flat target position of every index entry in a contiguous self
  local strides, s = {}, 1
  for d = nd, 1, -1 do strides[d] = s; s = s * sizes[d] end
  local pos = idx * strides[dim + 1]
  for d = 1, nd do
    if d - 1 ~= dim and ishape[d] > 1 then
      local view = {}
      for e = 1, nd do view[e] = e == d and ishape[d] or 1 end
      pos = pos + torch.arange(ishape[d], { dtype = i64, device = self.device }):mul(strides[d]):view(view)
    end
  end
  pos = pos:reshape(-1)
  local vals = src:reshape(sshape)
  for d = 1, nd do if ishape[d] < sshape[d] then vals = vals:narrow(d - 1, 0, ishape[d]) end end
  vals = vals:reshape(-1)
  local flat = self:reshape(-1)
  local P, dt, dev = flat:numel(), self.dtype, self.device
  local count = torch.zeros(P, { dtype = dt, device = dev }):index_add_(0, pos, torch.ones(pos:numel(), { dtype = dt, device = dev }))
  local touched = count:gt(0)
  local out
  if reduce == "sum" or reduce == "mean" then
    local sum = torch.zeros(P, { dtype = dt, device = dev }):index_add(0, pos, vals)
    if o.include_self then sum, count = sum + flat, count + 1 end
    if reduce == "mean" then
      local safe = torch.where(touched, count, torch.ones_like(count))
      sum = self:is_floating_point() and sum / safe or torch.floor_divide(sum, safe)
    end
    out = torch.where(touched, sum, flat)
  else
    local sorted_pos, order = pos:sort()
    local v = vals:index_select(0, order)
    local op = reduce == "prod" and function(a, b) return a * b end or reduce == "amax" and torch.maximum or torch.minimum
    if v:numel() > 1 then
      v = scan({ v, sorted_pos }, 0, function(L, R)
        return torch.where(L[2]:eq(R[2]), op(L[1], R[1]), R[1]), R[2]
      end)[1]
    end
    local K = v:numel()
    local last = torch.ones(K, { dtype = torch.bool, device = dev })
    if K > 1 then last:narrow(0, 0, K - 1):copy_(sorted_pos:narrow(0, 0, K - 1):ne(sorted_pos:narrow(0, 1, K - 1))) end
    local red = torch.zeros(P, { dtype = dt, device = dev }):index_add(0, sorted_pos:masked_select(last), v:masked_select(last))
    if o.include_self then red = op(flat, red) end
    out = torch.where(touched, red, flat)
  end
  return out:reshape(self:size())
end

function Tensor:scatter_reduce(...) return scatter_reduce(self, ...) end
function Tensor:scatter_reduce_(...) return self:copy_(scatter_reduce(self, ...)) end
function torch.scatter_reduce(input, ...) return scatter_reduce(input, ...) end

for _, name in ipairs({ "kron", "rot90", "logcumsumexp", "cummax", "cummin", "histc", "mode", "nanmedian" }) do
  Tensor[name] = torch[name]
end

-- ---- torch.testing.assert_close ----

torch.testing = torch.testing or {}

local default_tol = {
  [torch.float32] = { 1.3e-6, 1e-5 }, [torch.float64] = { 1e-7, 1e-7 },
  [torch.float16] = { 1e-3, 1e-5 }, [torch.bfloat16] = { 1.6e-2, 1e-5 },
}

local function tolerances(dtypes, o)
  if (o.rtol == nil) ~= (o.atol == nil) then
    fail("Both 'rtol' and 'atol' must be either specified or omitted, but got no %s.", o.rtol == nil and "rtol" or "atol")
  end
  if o.rtol ~= nil then return o.rtol, o.atol end
  local r, a = 0, 0
  for _, dt in ipairs(dtypes) do
    local t = default_tol[dt] or { 0, 0 }
    r, a = math.max(r, t[1]), math.max(a, t[2])
  end
  return r, a
end

local function pynum(v) return math.type(v) == "integer" and tostring(v) or U.pyfloat(v) end

local function mismatch(identifier, extra, abs, abs_at, atol, rel, rel_at, rtol)
  local equality = rtol == 0 and atol == 0
  local function line(kind, diff, at, tol)
    local s = at and string.format("Greatest %s difference: %s at index %s", kind, pynum(diff), at)
      or string.format("%s difference: %s", kind:sub(1, 1):upper() .. kind:sub(2), pynum(diff))
    if not equality then s = s .. " (up to " .. pynum(tol) .. " allowed)" end
    return s
  end
  return string.format("%s are not %s!\n\n%s\n%s\n%s", identifier, equality and "equal" or "close", extra,
    line("absolute", abs, abs_at, atol), line("relative", rel, rel_at, rtol))
end

local function raise(o, msg)
  if type(o.msg) == "string" then msg = o.msg elseif type(o.msg) == "function" then msg = o.msg(msg) end
  U.error(msg)
end

local function close_scalars(a, b, rtol, atol, equal_nan)
  if a == b then return true end
  if a ~= a or b ~= b then return equal_nan and a ~= a and b ~= b end
  if math.abs(a) == math.huge or math.abs(b) == math.huge then return false end
  return math.abs(a - b) <= atol + rtol * math.abs(b)
end

local function index_str(shape, k)
  if #shape == 0 then return "()" end
  local parts = {}
  for d = #shape, 1, -1 do parts[d] = tostring(k % shape[d]); k = k // shape[d] end
  return "(" .. table.concat(parts, ", ") .. (#shape == 1 and ",)" or ")")
end

local function flatten(v, out)
  if type(v) ~= "table" then out[#out + 1] = v; return out end
  for _, e in ipairs(v) do flatten(e, out) end
  return out
end

local function assert_tensors(a, e, o)
  local as, es = a:size():totable(), e:size():totable()
  if #as ~= #es or table.concat(as, ",") ~= table.concat(es, ",") then
    raise(o, string.format("The values for attribute 'shape' do not match: %s != %s.", tostring(a:size()), tostring(e:size())))
  end
  if a.device ~= e.device then
    raise(o, string.format("The values for attribute 'device' do not match: %s != %s.", tostring(a.device), tostring(e.device)))
  end
  if o.check_dtype and a.dtype ~= e.dtype then
    raise(o, string.format("The values for attribute 'dtype' do not match: %s != %s.", tostring(a.dtype), tostring(e.dtype)))
  end
  local rtol, atol = tolerances({ a.dtype, e.dtype }, o)
  local shape = a:size():totable()
  local av, ev = flatten(a:detach():cpu():tolist(), {}), flatten(e:detach():cpu():tolist(), {})
  local exact = not a:is_floating_point() and not e:is_floating_point()
  local bad, abs, abs_at, rel, rel_at = 0, 0, 0, 0, 0
  for k = 1, #av do
    local x, y = av[k], ev[k]
    if type(x) == "boolean" then x = x and 1 or 0 end
    if type(y) == "boolean" then y = y and 1 or 0 end
    if not close_scalars(x, y, rtol, atol, o.equal_nan) then
      bad = bad + 1
      local d = math.abs(x - y)
      local r = d / math.abs(y)
      if exact then r = d / math.abs(y + 0.0) end
      if d > abs or d ~= d then abs, abs_at = d, k - 1 end
      if r > rel or r ~= r then rel, rel_at = r, k - 1 end
    end
  end
  if bad == 0 then return end
  local extra = string.format("Mismatched elements: %d / %d (%.1f%%)", bad, #av, 100 * bad / #av)
  raise(o, mismatch("Tensor-likes", extra, abs, index_str(shape, abs_at), atol, rel, index_str(shape, rel_at), rtol))
end

local function assert_pair(a, e, o, path)
  local function with_path(f)
    local ok, err = pcall(f)
    if not ok then
      if path ~= "" and type(o.msg) ~= "string" then err = err .. "\n\nThe failure occurred for item " .. path end
      error(err, 0)
    end
  end
  if torch.is_tensor(a) and torch.is_tensor(e) then return with_path(function() assert_tensors(a, e, o) end) end
  if type(a) == "number" and type(e) == "number" then
    return with_path(function()
      if o.check_dtype and math.type(a) ~= math.type(e) then
        raise(o, string.format("The (d)types do not match: <class '%s'> != <class '%s'>.",
          math.type(a) == "integer" and "int" or "float", math.type(e) == "integer" and "int" or "float"))
      end
      local function kind(v) return math.type(v) == "integer" and torch.int64 or torch.float64 end
      local rtol, atol = tolerances({ kind(a), kind(e) }, o)
      if close_scalars(a, e, rtol, atol, o.equal_nan) then return end
      local d = math.abs(a - e)
      local r = e == 0 and math.huge or d / math.abs(e)
      raise(o, mismatch("Scalars", string.format("Expected %s but got %s.", pynum(e), pynum(a)), d, nil, atol, r + 0.0, nil, rtol))
    end)
  end
  if type(a) == "boolean" and type(e) == "boolean" then
    if a ~= e then with_path(function() raise(o, string.format("Booleans mismatch: %s is not %s", a and "True" or "False", e and "True" or "False")) end) end
    return
  end
  if type(a) == "table" and type(e) == "table" and getmetatable(a) == nil and getmetatable(e) == nil then
    if #a ~= #e then
      with_path(function() raise(o, string.format("The length of the sequences mismatch: %d != %d", #a, #e)) end)
    end
    for i = 1, #a do assert_pair(a[i], e[i], o, path .. "[" .. (i - 1) .. "]") end
    return
  end
  local function pytype(v)
    if torch.is_tensor(v) then return "torch.Tensor" end
    if type(v) == "number" then return math.type(v) == "integer" and "int" or "float" end
    if type(v) == "table" then return "list" end
    return U.typename(v)
  end
  U.errorf("No comparison pair was able to handle inputs of type <class '%s'> and <class '%s'>.", pytype(a), pytype(e))
end

-- torch.testing.assert_close(actual, expected, {rtol=, atol=, equal_nan=false, check_dtype=true,
-- check_device=true, msg=}): raises with PyTorch's report when they differ (a string msg
-- replaces the report; a function gets it and returns the message)
function torch.testing.assert_close(actual, expected, opts)
  local o = U.parse("assert_close", { { "rtol" }, { "atol" }, { "equal_nan", false }, { "check_device", true },
    { "check_dtype", true }, { "check_layout", true }, { "check_stride", false }, { "msg" } }, opts or {})
  if not o.check_dtype and torch.is_tensor(actual) and torch.is_tensor(expected) and actual.dtype ~= expected.dtype then
    local common = (actual:reshape(-1):narrow(0, 0, 0) + expected:reshape(-1):narrow(0, 0, 0)).dtype
    local rt, at = tolerances({ actual.dtype, expected.dtype }, o)
    o.rtol, o.atol = rt, at
    actual, expected = actual:to(common), expected:to(common)
  end
  assert_pair(actual, expected, o, "")
end

-- ---- gradcheck and torch.autograd.functional ----

local function as_list(inputs)
  if torch.is_tensor(inputs) then return { inputs }, true end
  return inputs, false
end

local function outputs_of(...)
  local n, r = select("#", ...), ...
  if n > 1 then return { ... }, false end
  if torch.is_tensor(r) then return { r }, true end
  if type(r) == "table" then return r, false end
  fail("function must return a Tensor or a list of Tensors, got %s", U.typename(r))
end

local function set_flat(t, k, v)
  local c = t:detach():clone()
  c:view(-1)[k] = v
  return c
end

-- the [n, m] Jacobian of output oi against input i by forward mode: row k is the output's
-- tangent when input i carries the k-th unit tangent
local function forward_jacobian(call, xs, i, oi, n, m)
  local fwAD = torch.autograd.forward_ad
  local J = torch.zeros(n, m, { dtype = torch.float64 })
  for k = 0, n - 1 do
    local _ <close> = fwAD.dual_level()
    local args = { table.unpack(xs, 1, #xs) }
    local e = torch.zeros(xs[i]:numel(), { dtype = xs[i].dtype, device = xs[i].device })
    e[k] = 1
    args[i] = fwAD.make_dual(xs[i]:detach(), e:view_as(xs[i]))
    local t = fwAD.unpack_dual(call(args)[oi]).tangent
    if t ~= nil then J[k]:copy_(t:detach():reshape(-1):to(torch.float64)) end
  end
  return J
end

-- torch.autograd.gradcheck(func, inputs, {eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=true}):
-- every floating output's Jacobian by central differences against backward's, per input that
-- requires grad (float64 ones, for the differences to mean anything). True, or raises / false.
-- check_forward_ad also compares forward mode's Jacobian (one dual per input element, through
-- torch.autograd.forward_ad); check_backward_ad = false skips backward's (a Function with only
-- a jvp). The batched checks (vmap of the gradients) are not run here.
function torch.autograd.gradcheck(func, inputs, ...)
  local o = U.parse("gradcheck", { { "eps", 1e-6 }, { "atol", 1e-5 }, { "rtol", 1e-3 }, { "raise_exception", true },
    { "nondet_tol", 0.0 }, { "check_undefined_grad", true }, { "fast_mode", false }, { "check_forward_ad", false },
    { "check_backward_ad", true }, { "check_batched_grad", false }, { "check_batched_forward_grad", false } }, ...)
  local xs = as_list(inputs)
  local wrt = {}
  for i, x in ipairs(xs) do
    if torch.is_tensor(x) and x.requires_grad then
      if x.dtype ~= torch.float64 then
        fail("gradcheck: input %d requires gradient and is not a double precision floating point (%s); use float64 inputs", i - 1, tostring(x.dtype))
      end
      wrt[#wrt + 1] = i
    end
  end
  if #wrt == 0 then fail("gradcheck expects at least one input tensor to require gradient, but none of the them have requires_grad=True.") end
  local function call(args)
    return (outputs_of(func(table.unpack(args, 1, #xs))))
  end
  local outs = call(xs)
  for oi, out in ipairs(outs) do
    if torch.is_tensor(out) and out:is_floating_point() then
      local m = out:numel()
      for _, i in ipairs(wrt) do
        local x = xs[i]
        local n = x:numel()
        -- Jacobians as [n, m] (input element, output element), as PyTorch prints them
        local num = torch.zeros(n, m, { dtype = torch.float64 })
        local ana = torch.zeros(n, m, { dtype = torch.float64 })
        do
          local _ <close> = torch.no_grad()
          local base = x:detach():reshape(-1):tolist()
          for k = 0, n - 1 do
            local args = { table.unpack(xs, 1, #xs) }
            args[i] = set_flat(x, k, base[k + 1] + o.eps)
            local up = call(args)[oi]:detach():to(torch.float64):reshape(-1)
            args[i] = set_flat(x, k, base[k + 1] - o.eps)
            local down = call(args)[oi]:detach():to(torch.float64):reshape(-1)
            num[k]:copy_((up - down) / (2 * o.eps))
          end
        end
        local fwd = o.check_forward_ad and forward_jacobian(call, xs, i, oi, n, m)
        if fwd and not torch.allclose(fwd, num, o.rtol, o.atol) then
          if not o.raise_exception then return false end
          U.errorf("Jacobian computed with forward mode mismatch for output %d with respect to input %d,\nnumerical:%s\nanalytical:%s\n",
            oi - 1, i - 1, tostring(num), tostring(fwd))
        end
        if not o.check_backward_ad then goto next_input end
        if out.requires_grad then
          local flat_out = out:reshape(-1)
          for j = 0, m - 1 do
            local g = torch.autograd.grad({ flat_out[j] }, { x }, nil, { retain_graph = true, allow_unused = true })[1]
            if g ~= nil then ana:select(1, j):copy_(g:detach():reshape(-1):to(torch.float64)) end
          end
        end
        if not torch.allclose(ana, num, o.rtol, o.atol) then
          if not o.raise_exception then return false end
          U.errorf("Jacobian mismatch for output %d with respect to input %d,\nnumerical:%s\nanalytical:%s\n",
            oi - 1, i - 1, tostring(num), tostring(ana))
        end
        ::next_input::
      end
    end
  end
  return true
end

torch.autograd.functional = torch.autograd.functional or {}
local F = torch.autograd.functional

-- the inputs as requires-grad leaves; with create, those that require grad stay on their graph
local function prepare(fname, inputs, create)
  local xs, single = as_list(inputs)
  local leaves = {}
  for i, x in ipairs(xs) do
    if not torch.is_tensor(x) then
      fail("The inputs given to %s must be either a Tensor or a tuple of Tensors but the value at index %d has type %s.", fname, i - 1, U.typename(x))
    end
    leaves[i] = create and x.requires_grad and x:view_as(x) or x:detach():clone():requires_grad_(x:is_floating_point())
  end
  return leaves, single
end

-- the Jacobian of one output against every leaf: J[i] of shape out.shape .. leaf.shape, one row
-- of gradients per output element (differentiable themselves with create)
local function jacobian_of(out, leaves, create)
  local m = out:numel()
  local rows = {}
  for i = 1, #leaves do rows[i] = {} end
  local flat = out.requires_grad and out:reshape(-1) or nil
  for j = 0, m - 1 do
    local g = flat and torch.autograd.grad({ flat[j] }, leaves, nil, { retain_graph = true, allow_unused = true, create_graph = create }) or {}
    for i, x in ipairs(leaves) do
      rows[i][j + 1] = g[i] ~= nil and g[i]:reshape(-1) or torch.zeros(x:numel(), { dtype = out.dtype, device = out.device })
    end
  end
  local js = {}
  for i, x in ipairs(leaves) do
    local shape = out:size():totable()
    for _, s in ipairs(x:size():totable()) do shape[#shape + 1] = s end
    local J = m > 0 and torch.stack(rows[i], 0) or torch.zeros(0, x:numel(), { dtype = out.dtype, device = out.device })
    js[i] = create and J:reshape(shape) or J:detach():reshape(shape)
  end
  return js
end

-- func's outputs (a list, and whether it returned one tensor) with grad mode on
local function outputs_with_grad(func, leaves)
  local _ <close> = torch.enable_grad()
  return outputs_of(func(table.unpack(leaves)))
end

-- the Jacobian by torch.func's jacrev (vmap over vjp) or jacfwd (forward-mode AD): shaped as
-- jacobian's
local function jacobian_by(transform, func, inputs)
  local xs, single_in = as_list(inputs)
  for i, x in ipairs(xs) do
    if not torch.is_tensor(x) then
      fail("The inputs given to jacobian must be either a Tensor or a tuple of Tensors but the value at index %d has type %s.", i - 1, U.typename(x))
    end
  end
  local argnums = {}
  for i = 1, #xs do argnums[i] = i - 1 end
  local single_out
  local function g(...)
    local outs, single = outputs_of(func(...))
    single_out = single
    return single and outs[1] or outs
  end
  local r = transform(g, argnums)(table.unpack(xs))
  if not single_in then return r end
  if single_out then return r[1] end
  local res = {}
  for k, per_input in ipairs(r) do res[k] = per_input[1] end
  return res
end

-- jacobian(func, inputs, {create_graph=false, strict=false, vectorize=false,
-- strategy="reverse-mode"}): a tensor for one input and one output, a list per input / per output
-- otherwise (list of lists for both). vectorize: by torch.func.jacrev (one batched backward) or,
-- with strategy="forward-mode", jacfwd (one batched forward-mode pass)
function F.jacobian(func, inputs, ...)
  local o = U.parse("jacobian", { { "create_graph", false }, { "strict", false }, { "vectorize", false },
    { "strategy", "reverse-mode" } }, ...)
  if o.strategy ~= "reverse-mode" and o.strategy ~= "forward-mode" then
    fail('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your function has more outputs than inputs, "forward-mode" tends to be more performant. Otherwise, prefer to use "reverse-mode".')
  end
  if o.strategy == "forward-mode" then
    if o.create_graph then
      fail('torch.autograd.functional.jacobian: `create_graph=True` and `strategy="forward-mode"` are not supported together (yet). Please either set `create_graph=False` or `strategy="reverse-mode"`.')
    end
    if o.strict then
      fail('torch.autograd.functional.jacobian: `strict=True` and `strategy="forward-mode"` are not supported together (yet). Please either set `strict=False` or `strategy="reverse-mode"`.')
    end
    if not o.vectorize then
      fail("Computing Jacobian using forward-AD or forward-over-reverse Hessian is only implemented for `vectorize=True`.")
    end
    return jacobian_by(torch.func.jacfwd, func, inputs)
  end
  if o.vectorize and not o.create_graph and not o.strict then return jacobian_by(torch.func.jacrev, func, inputs) end
  local leaves, single_in = prepare("jacobian", inputs, o.create_graph)
  local outs, single_out = outputs_with_grad(func, leaves)
  local res = {}
  for k, out in ipairs(outs) do
    local js = jacobian_of(out, leaves, o.create_graph)
    res[k] = single_in and js[1] or js
  end
  return single_out and res[1] or res
end

local function detached(outs, single, create)
  local r = {}
  for i, t in ipairs(outs) do r[i] = create and t or t:detach() end
  return single and r[1] or r
end

-- vjp(func, inputs, v=nil, {create_graph=false, strict=false}) -> outputs, v^T J (per input)
function F.vjp(func, inputs, v, ...)
  local o = U.parse("vjp", { { "create_graph", false }, { "strict", false } }, ...)
  local leaves, single_in = prepare("vjp", inputs, o.create_graph)
  local outs, single_out = outputs_with_grad(func, leaves)
  local vs = v == nil and {} or (torch.is_tensor(v) and { v } or v)
  if v == nil then
    for i, out in ipairs(outs) do
      if out:numel() ~= 1 then
        fail("The vector v can only be None if the user-provided function returns a single Tensor with a single element.")
      end
      vs[i] = torch.ones_like(out)
    end
  end
  if #vs ~= #outs then fail("v is a tuple of invalid length: should be %d but got %d.", #outs, #vs) end
  local used, grads = {}, {}
  for i, out in ipairs(outs) do
    if vs[i]:size():totable()[1] ~= nil or out:dim() > 0 then
      if table.concat(vs[i]:size():totable(), ",") ~= table.concat(out:size():totable(), ",") then
        fail("Mismatch in shape: grad_output[%d] has a shape of %s and output[%d] has a shape of %s.", i - 1,
          tostring(vs[i]:size()), i - 1, tostring(out:size()))
      end
    end
    if out.requires_grad then used[#used + 1] = i end
  end
  local g = {}
  if #used > 0 then
    local os, gs = {}, {}
    for k, i in ipairs(used) do os[k], gs[k] = outs[i], vs[i] end
    g = torch.autograd.grad(os, leaves, gs, { allow_unused = true, create_graph = o.create_graph })
  end
  for i, x in ipairs(leaves) do
    grads[i] = g[i] ~= nil and (o.create_graph and g[i] or g[i]:detach()) or torch.zeros_like(x):detach()
  end
  return detached(outs, single_out, o.create_graph), single_in and grads[1] or grads
end

-- v checked against the inputs as PyTorch's _validate_v does (vs: a list, or nil)
local function check_v(vs, leaves, single_in)
  if #vs ~= #leaves then
    if single_in then fail("The given v should contain a single Tensor.") end
    fail("v is a tuple of invalid length: should be %d but got %d.", #leaves, #vs)
  end
  for i, x in ipairs(leaves) do
    if tostring(vs[i]:size()) ~= tostring(x:size()) then
      fail("%sv has invalid size: should be %s but got %s.", #leaves > 1 and ("Entry " .. (i - 1) .. " in ") or "",
        tostring(x:size()), tostring(vs[i]:size()))
    end
  end
end

-- v as a list, ones for a single one-element input when nil
local function v_list(v, leaves, single_in)
  if v == nil then
    if #leaves ~= 1 or leaves[1]:numel() ~= 1 then
      fail("The vector v can only be None if the input to the user-provided function is a single Tensor with a single element.")
    end
    return { torch.ones_like(leaves[1]):detach() }
  end
  local vs = torch.is_tensor(v) and { v } or v
  check_v(vs, leaves, single_in)
  return vs
end

-- strict mode: every output computed from the inputs
local function check_outputs_require_grad(outs, strict)
  if not strict then return end
  for i, out in ipairs(outs) do
    if not out.requires_grad then
      fail("Output %d of the user-provided function does not require gradients. The outputs must be computed in a differentiable manner from the input when running in strict mode.", i - 1)
    end
  end
end

-- jvp(func, inputs, v=nil, {create_graph=false, strict=false}) -> outputs, J v (per output), by
-- the double-backward trick: one backward with dummy cotangents, one through that backward
function F.jvp(func, inputs, v, ...)
  local o = U.parse("jvp", { { "create_graph", false }, { "strict", false } }, ...)
  local leaves, single_in = prepare("jvp", inputs, o.create_graph)
  local vs = v_list(v, leaves, single_in)
  local outs, single_out = outputs_with_grad(func, leaves)
  check_outputs_require_grad(outs, o.strict)
  local apply, gs = require("jvp_util").linear_map("torch.autograd.functional.jvp", outs, leaves)
  if o.strict then
    for i = 1, #leaves do
      if gs[i] == nil then
        fail("The output of the user-provided function is independent of input %d. This is not allowed in strict mode.", i - 1)
      elseif not gs[i].requires_grad then
        fail("The gradient with respect to input %d is independent of the inputs of the user-provided function. This is not allowed in strict mode.", i - 1)
      end
    end
  end
  local res = apply(vs, o.create_graph)
  for i, out in ipairs(outs) do
    if res[i] == nil then
      if o.strict then
        fail("The gradient with respect to the input is independent of entry %d in the grad_outputs when using the double backward trick to compute forward mode gradients. This is not allowed in strict mode.", i - 1)
      end
      res[i] = torch.zeros_like(out):detach()
    elseif o.strict and o.create_graph and not res[i].requires_grad then
      fail("The jacobian of the user-provided function is independent of input %d. This is not allowed in strict mode when create_graph=True.", i - 1)
    end
  end
  return detached(outs, single_out, o.create_graph), single_out and res[1] or res
end

-- func's one scalar output and its gradient against every leaf, recorded for a second backward
local function scalar_and_gradient(fname, func, leaves, strict)
  local outs, single = outputs_with_grad(func, leaves)
  check_outputs_require_grad(outs, strict)
  if not single then fail("The function given to %s should return a single Tensor", fname) end
  local out = outs[1]
  if out:numel() ~= 1 then
    fail("The Tensor returned by the function given to %s should contain a single element", fname)
  end
  local g = out.requires_grad and torch.autograd.grad({ out }, leaves, nil, { create_graph = true, allow_unused = true }) or {}
  local grads = {}
  for i, x in ipairs(leaves) do
    if strict and g[i] == nil then
      fail("The output of the user-provided function is independent of input %d. This is not allowed in strict mode.", i - 1)
    elseif strict and not g[i].requires_grad then
      fail("While computing the hessian, found that the jacobian of the user-provided function with respect to input %d is independent of the input. This is not allowed in strict mode. You should ensure that your function is twice differentiable and that the jacobian depends on the inputs (this would be violated by a linear function for example).", i - 1)
    end
    grads[i] = g[i] ~= nil and g[i] or torch.zeros_like(x)
  end
  return out, grads
end

-- hessian(func, inputs, {create_graph=false, strict=false, vectorize=false,
-- outer_jacobian_strategy="reverse-mode"}): H[i][j] of shape inputs[i].shape .. inputs[j].shape
-- (one tensor for one input); both strategies give the same rows, by reverse over reverse
function F.hessian(func, inputs, ...)
  local o = U.parse("hessian", { { "create_graph", false }, { "strict", false }, { "vectorize", false },
    { "outer_jacobian_strategy", "reverse-mode" } }, ...)
  if o.outer_jacobian_strategy ~= "forward-mode" and o.outer_jacobian_strategy ~= "reverse-mode" then
    fail('Expected strategy to be either "forward-mode" or "reverse-mode".')
  end
  local leaves, single_in = prepare("hessian", inputs, o.create_graph)
  local _, grads = scalar_and_gradient("hessian", func, leaves, o.strict)
  local H = {}
  for i, g in ipairs(grads) do H[i] = jacobian_of(g, leaves, o.create_graph) end
  return single_in and H[1][1] or H
end

-- vhp(func, inputs, v, {create_graph=false, strict=false}) -> output, v^T H; hvp gives H v, the
-- same for the symmetric Hessian of a twice-differentiable function
local function vhp(fname, func, inputs, v, ...)
  local o = U.parse(fname, { { "create_graph", false }, { "strict", false } }, ...)
  local leaves, single_in = prepare(fname, inputs, o.create_graph)
  local vs = v_list(v, leaves, single_in)
  local out, grads = scalar_and_gradient(fname, func, leaves, o.strict)
  local live, gv = {}, {}
  for i, g in ipairs(grads) do
    if g.requires_grad then live[#live + 1] = i end
  end
  local r = {}
  if #live > 0 then
    local gs, ws = {}, {}
    for k, i in ipairs(live) do gs[k], ws[k] = grads[i], vs[i]:to(grads[i].dtype) end
    r = torch.autograd.grad(gs, leaves, ws, { allow_unused = true, create_graph = o.create_graph })
  end
  for i, x in ipairs(leaves) do
    if o.strict and r[i] == nil then
      if fname == "hvp" then
        fail("The hessian of the user-provided function is independent of entry %d in the grad_jacobian. This is not allowed in strict mode as it prevents from using the double backward trick to replace forward mode AD.", i - 1)
      end
      fail("The jacobian of the user-provided function is independent of input %d. This is not allowed in strict mode.", i - 1)
    elseif o.strict and o.create_graph and not r[i].requires_grad then
      fail("The hessian of the user-provided function is independent of input %d. This is not allowed in strict mode when create_graph=True.", i - 1)
    end
    gv[i] = r[i] ~= nil and (o.create_graph and r[i] or r[i]:detach()) or torch.zeros_like(x):detach()
  end
  return o.create_graph and out or out:detach(), single_in and gv[1] or gv
end
function F.vhp(func, inputs, v, ...) return vhp("vhp", func, inputs, v, ...) end
function F.hvp(func, inputs, v, ...) return vhp("hvp", func, inputs, v, ...) end

return {}
