-- More of PyTorch's tensor methods, made of the tensor ops (autograd and devices come with
-- them): index_put(_), index_copy(_), masked_scatter(_), put(_), select_scatter,
-- slice_scatter, diagonal_scatter, diag_embed, narrow_copy, index_reduce(_); in-place
-- randoms from torch's generator (random_, exponential_, geometric_, cauchy_, log_normal_,
-- bernoulli_); addmm_, lerp_, tril_, triu_, nan_to_num_, copysign_, inner, vdot,
-- matrix_power, matrix_exp, renorm(_), dist, unique_consecutive, is_nonzero, isreal, gcd,
-- lcm. The special functions (lgamma, digamma, polygamma, erfinv, i0) live in torch_special.lua.
local torch = require "torch"
local U = require "nn_util"
local Tensor = torch.Tensor

local fail = U.errorf
local check_tensor = U.check_tensor
local wrap_dim = U.wrap_dim
local i64 = torch.int64

local pytype_name = U.scalar_name

local function shape_list(x) return x:size():totable() end
local function shape_str(t) return "[" .. table.concat(t, ", ") .. "]" end

-- f's result written into self (f sees a copy when autograd records, as U.maybe_inplace)
local function inplace(self, f) return U.maybe_inplace(self, f, true) end

-- torch.name(x, ...) also as x:name(...), and x:name_(...) writing into x
local function install(name, with_inplace)
  Tensor[name] = torch[name]
  if with_inplace then
    Tensor[name .. "_"] = function(self, ...)
      local args = table.pack(...)
      return inplace(self, function(s) return torch[name](s, table.unpack(args, 1, args.n)) end)
    end
  end
end

-- index (0-d or 1-d) as a view with index:numel() at dim and 1 elsewhere, expanded to shape
local function index_along(index, dim, shape)
  local view = {}
  for d = 1, #shape do view[d] = d - 1 == dim and index:numel() or 1 end
  return index:reshape(view):expand(shape)
end

-- ---- indexing writes ----

-- index_copy(x, dim, index, source): x with x[..., index[i], ...] (along dim) = source[..., i, ...]
function torch.index_copy(x, dim, index, source)
  check_tensor("index_copy", "input", 1, x)
  check_tensor("index_copy", "index", 3, index)
  check_tensor("index_copy", "source", 4, source)
  dim = wrap_dim(dim, x:dim())
  if index:dim() > 1 then fail("index_copy_(): Index should have dimension 1 or 0 (got %d)", index:dim()) end
  if index.dtype ~= i64 then fail("index_copy_(): Expected a long tensor for index, but got %s", pytype_name(index.dtype)) end
  if x.dtype ~= source.dtype then
    fail("index_copy_(): self and source expected to have the same dtype, but got (self) %s and (source) %s",
      pytype_name(x.dtype), pytype_name(source.dtype))
  end
  local src = source:dim() == 0 and source:reshape(1) or source
  local n = src:dim() == 0 and 1 or src:size(math.min(dim, src:dim() - 1))
  if src:dim() ~= math.max(x:dim(), 1) or index:numel() ~= n then
    fail("index_copy_(): Number of indices (%d) should be equal to source.size(dim) (%d)", index:numel(), n)
  end
  if index:numel() == 0 then return x:clone() end
  local xs = x:dim() == 0 and x:reshape(1) or x
  local idx = index:reshape(-1)
  idx = torch.where(idx:lt(0), idx + xs:size(dim), idx)
  return xs:scatter(dim, index_along(idx, dim, shape_list(src)), src):reshape(x:size())
end
install("index_copy", true)

-- The flat positions x[i1, i2, ...] reaches over x's leading #indices dims (bool masks stand for
-- their nonzero() columns; negative indices count from the end): lin (the broadcast shape of the
-- indices), the indexed dims' sizes' product and the remaining dims' sizes.
local function linear_index(fname, x, indices)
  local idx = {}
  for _, t in ipairs(indices) do
    check_tensor(fname, "indices", 2, t)
    if t.dtype == torch.bool or t.dtype == torch.uint8 then
      local nz = t:to(torch.bool):nonzero()
      for c = 0, t:dim() - 1 do idx[#idx + 1] = nz:select(1, c) end
    elseif t.dtype ~= i64 and t.dtype ~= torch.int32 then
      fail("tensors used as indices must be long, int, byte or bool tensors")
    else
      idx[#idx + 1] = t:to(i64)
    end
  end
  if #idx > x:dim() then fail("too many indices for tensor of dimension %d (got %d)", x:dim(), #idx) end
  local shape = shape_list(x)
  local bshape = shape_list(torch.broadcast_tensors(table.unpack(idx)))
  local lin, lead = nil, 1
  for k = 1, #idx do
    local n = shape[k]
    local i = idx[k]:expand(bshape)
    local hi, lo = i:numel() > 0 and i:max():item(), i:numel() > 0 and i:min():item()
    if hi and (hi >= n or lo < -n) then fail("index %d is out of bounds for dimension %d with size %d", hi >= n and hi or lo, k - 1, n) end
    i = torch.where(i:lt(0), i + n, i)
    lin = lin and lin * n + i or i
    lead = lead * n
  end
  local rest = {}
  for d = #idx + 1, #shape do rest[#rest + 1] = shape[d] end
  return lin, bshape, lead, rest
end

-- index_put(x, {i1, i2, ...}, values, accumulate=false): x[i1, i2, ...] = values (or +=)
function torch.index_put(x, indices, values, accumulate)
  check_tensor("index_put", "input", 1, x)
  check_tensor("index_put", "values", 3, values)
  if type(indices) ~= "table" then fail("index_put(): argument 'indices' must be tuple of Tensors, not %s", U.typename(indices)) end
  if x.dtype ~= values.dtype then
    fail("Index put requires the source and destination dtypes match, got %s for the destination and %s for the source.",
      pytype_name(x.dtype), pytype_name(values.dtype))
  end
  local lin, bshape, lead, rest = linear_index("index_put", x, indices)
  local vshape = {}
  for _, s in ipairs(bshape) do vshape[#vshape + 1] = s end
  for _, s in ipairs(rest) do vshape[#vshape + 1] = s end
  local m = lin:numel()
  local v = values:expand(vshape):reshape({ m, table.unpack(rest) })
  local xf = x:reshape({ lead, table.unpack(rest) })
  if m == 0 then return x:clone() end
  local out
  if accumulate then
    out = xf:index_add(0, lin:reshape(-1), v)
  else
    out = xf:scatter(0, index_along(lin:reshape(-1), 0, shape_list(v)), v)
  end
  return out:reshape(x:size())
end
install("index_put", true)

-- x[{i1, i2, ...}] and x[{i1, i2, ...}] = value (tensor/tensor.c's fallback for a list of index
-- tensors or lists): Python's x[i1, i2, ...] with advanced indices only
function torch._index_tensors(x, key, value)
  local indices = {}
  for k, t in ipairs(key) do
    local i = torch.is_tensor(t) and t or torch.tensor(t)
    if i.device.type ~= "cpu" and tostring(i.device) ~= tostring(x.device) then
      fail("indices should be either on cpu or on the same device as the indexed tensor (%s)", tostring(x.device))
    end
    indices[k] = i:to(x.device)
  end
  if value == nil then
    local lin, bshape, lead, rest = linear_index("index", x, indices)
    local out_shape = {}
    for _, s in ipairs(bshape) do out_shape[#out_shape + 1] = s end
    for _, s in ipairs(rest) do out_shape[#out_shape + 1] = s end
    return x:reshape({ lead, table.unpack(rest) }):index_select(0, lin:reshape(-1)):reshape(out_shape)
  end
  if not torch.is_tensor(value) then value = torch.tensor(value, { dtype = x.dtype, device = x.device }) end
  x:index_put_(indices, value:to(x.device):to(x.dtype)) -- a value on the CPU is copied over, as x[idx] = v does
end

-- masked_scatter(x, mask, source): x's entries where mask (broadcast) is true take source's
-- leading entries in order
function torch.masked_scatter(x, mask, source)
  check_tensor("masked_scatter", "input", 1, x)
  check_tensor("masked_scatter", "mask", 2, mask)
  check_tensor("masked_scatter", "source", 3, source)
  if mask.dtype ~= torch.bool then fail("masked_scatter_ only supports boolean masks, but got mask with dtype %s", tostring(mask.dtype)) end
  if x.dtype ~= source.dtype then
    fail("masked_scatter: expected self and source to have same dtypes but got %s and %s", pytype_name(x.dtype), pytype_name(source.dtype))
  end
  local pos = mask:expand(x:size()):reshape(-1):nonzero():reshape(-1)
  local n = pos:numel()
  if source:numel() < n then fail("masked_scatter: expected source to have at least %d elements, got %d", n, source:numel()) end
  if n == 0 then return x:clone() end
  return x:reshape(-1):scatter(0, pos, source:reshape(-1):narrow(0, 0, n)):reshape(x:size())
end
install("masked_scatter", true)

-- put(x, index, source, accumulate=false): x's flattened entries at index = source (or +=)
function torch.put(x, index, source, accumulate)
  check_tensor("put", "input", 1, x)
  check_tensor("put", "index", 2, index)
  check_tensor("put", "source", 3, source)
  if index.dtype ~= i64 then fail("put_(): Expected a long tensor for index, but got %s", pytype_name(index.dtype)) end
  if x.dtype ~= source.dtype then
    fail("put_(): self and source expected to have the same dtype, but got self.dtype = %s and source.dtype = %s",
      pytype_name(x.dtype), pytype_name(source.dtype))
  end
  if index:numel() ~= source:numel() then
    fail("put_(): Expected source and index to have the same number of elements, but got source.numel() = %d, index.numel() = %d",
      source:numel(), index:numel())
  end
  local n = x:numel()
  local idx = index:reshape(-1)
  if idx:numel() == 0 then return x:clone() end
  local bad = idx:ge(n):logical_or(idx:lt(-n))
  if bad:any():item() then
    fail("out of range: tried to access index %d on a tensor of %d elements.", idx:masked_select(bad)[0]:item(), n)
  end
  idx = torch.where(idx:lt(0), idx + n, idx)
  local flat, src = x:reshape(-1), source:reshape(-1)
  local out = accumulate and flat:index_add(0, idx, src) or flat:scatter(0, idx, src)
  return out:reshape(x:size())
end
install("put", true)

-- select_scatter(input, src, dim, index): input with input.select(dim, index) = src
function torch.select_scatter(x, src, dim, index)
  check_tensor("select_scatter", "input", 1, x)
  check_tensor("select_scatter", "src", 2, src)
  dim = wrap_dim(dim, x:dim())
  local n = x:size(dim)
  if index < -n or index >= n then
    fail("select(): index %d out of range for tensor of size %s at dimension %d", index, tostring(x:size()), dim)
  end
  local want = shape_list(x:select(dim, 0))
  if shape_str(shape_list(src)) ~= shape_str(want) then
    fail("expected src to have a size equal to the slice of self. src size = %s, slice size = %s",
      shape_str(shape_list(src)), shape_str(want))
  end
  if index < 0 then index = index + n end
  return torch.index_copy(x, dim, torch.tensor({ index }, { device = x.device }), src:to(x.dtype):unsqueeze(dim))
end

-- slice_scatter(input, src, dim=0, start=nil, end=nil, step=1): input with input[start:end:step] (along dim) = src
function torch.slice_scatter(x, src, ...)
  check_tensor("slice_scatter", "input", 1, x)
  check_tensor("slice_scatter", "src", 2, src)
  local o = U.parse("slice_scatter", { { "dim", 0 }, { "start" }, { "end" }, { "step", 1 } }, ...)
  local dim = wrap_dim(o.dim, x:dim())
  local n = x:size(dim)
  if o.step <= 0 then fail("slice step must be positive") end
  local s, e = o.start or 0, o["end"] or n
  if s < 0 then s = s + n end
  if e < 0 then e = e + n end
  s, e = math.min(math.max(s, 0), n), math.min(math.max(e, s), n)
  local want = shape_list(x)
  want[dim + 1] = (e - s + o.step - 1) // o.step
  if shape_str(shape_list(src)) ~= shape_str(want) then
    fail("expected src to have a size equal to the slice of self. src size = %s, slice size = %s",
      shape_str(shape_list(src)), shape_str(want))
  end
  if want[dim + 1] == 0 then return x:clone() end
  return torch.index_copy(x, dim, torch.arange(s, e, o.step, { device = x.device }), src:to(x.dtype))
end

-- the (offset) diagonal of the last two dims of x (r x c) as flat positions r*c
local function diag_positions(r, c, offset, device)
  local len = offset >= 0 and math.max(math.min(r, c - offset), 0) or math.max(math.min(r + offset, c), 0)
  local i = torch.arange(len, { device = device })
  local row, col = offset >= 0 and i or i - offset, offset >= 0 and i + offset or i
  return row * c + col, len
end

-- diagonal_scatter(input, src, offset=0, dim1=0, dim2=1): input with input.diagonal(offset, dim1, dim2) = src
function torch.diagonal_scatter(x, src, ...)
  check_tensor("diagonal_scatter", "input", 1, x)
  check_tensor("diagonal_scatter", "src", 2, src)
  local o = U.parse("diagonal_scatter", { { "offset", 0 }, { "dim1", 0 }, { "dim2", 1 } }, ...)
  local nd = x:dim()
  local d1, d2 = wrap_dim(o.dim1, nd), wrap_dim(o.dim2, nd)
  if d1 == d2 then fail("diagonal dimensions cannot be identical %d, %d", o.dim1, o.dim2) end
  local want = shape_list(x:diagonal(o.offset, d1, d2))
  if shape_str(shape_list(src)) ~= shape_str(want) then
    fail("expected src to have a size equal to the slice of self. src size = %s, slice size = %s",
      shape_str(shape_list(src)), shape_str(want))
  end
  local moved = x:movedim({ d1, d2 }, { nd - 2, nd - 1 })
  local ms = shape_list(moved)
  local r, c = ms[nd - 1], ms[nd]
  local pos, len = diag_positions(r, c, o.offset, x.device)
  if len == 0 then return x:clone() end
  local flat_shape = {}
  for k = 1, nd - 2 do flat_shape[k] = ms[k] end
  flat_shape[nd - 1] = r * c
  local flat = moved:reshape(flat_shape)
  local out = torch.index_copy(flat, nd - 2, pos, src:to(x.dtype))
  return out:reshape(ms):movedim({ nd - 2, nd - 1 }, { d1, d2 })
end

-- diag_embed(input, offset=0, dim1=-2, dim2=-1): input's last dim as the (offset) diagonal
-- of new dims dim1, dim2 (of the output), zeros elsewhere
function torch.diag_embed(x, ...)
  check_tensor("diag_embed", "input", 1, x)
  local o = U.parse("diag_embed", { { "offset", 0 }, { "dim1", -2 }, { "dim2", -1 } }, ...)
  local nd = x:dim() + 1
  local d1, d2 = wrap_dim(o.dim1, nd), wrap_dim(o.dim2, nd)
  if d1 == d2 then fail("diagonal dimensions cannot be identical %d, %d", o.dim1, o.dim2) end
  local xs = x:dim() == 0 and x:reshape(1) or x
  local shape = shape_list(xs)
  local n = shape[#shape] + math.abs(o.offset)
  shape[#shape] = n
  shape[#shape + 1] = n
  local z = torch.zeros(shape, { dtype = x.dtype, device = x.device })
  local out = torch.diagonal_scatter(z, xs, o.offset, -2, -1)
  return out:movedim({ nd - 2, nd - 1 }, { d1, d2 })
end

function torch.narrow_copy(x, dim, start, length) return x:narrow(dim, start, length):clone() end

-- index_reduce(x, dim, index, source, reduce, include_self=true), reduce: prod, mean, amax, amin
function torch.index_reduce(x, dim, index, source, reduce, ...)
  check_tensor("index_reduce", "input", 1, x)
  check_tensor("index_reduce", "index", 3, index)
  check_tensor("index_reduce", "source", 4, source)
  local o = U.parse("index_reduce", { { "include_self", true } }, ...)
  if reduce ~= "prod" and reduce ~= "mean" and reduce ~= "amax" and reduce ~= "amin" then
    fail("index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got %s.", tostring(reduce))
  end
  dim = wrap_dim(dim, x:dim())
  if index:dim() > 1 then fail("index_reduce_(): Index is supposed to be a vector") end
  if index.dtype ~= i64 and index.dtype ~= torch.int32 then fail("index_reduce_(): Expected dtype int32/int64 for index") end
  if x.dtype ~= source.dtype then fail("index_reduce_(): self and source must have the same scalar type") end
  local n = source:dim() == 0 and 1 or source:size(dim)
  if index:numel() ~= n then fail("index_reduce_(): Number of indices (%d) should be equal to source.size(dim) (%d)", index:numel(), n) end
  if n == 0 then return x:clone() end
  local idx = index:to(i64):reshape(-1)
  idx = torch.where(idx:lt(0), idx + x:size(dim), idx)
  return x:scatter_reduce(dim, index_along(idx, dim, shape_list(source)), source, reduce, { include_self = o.include_self })
end
install("index_reduce", true)

U.check_all(torch, { narrow_copy = { "input:Tensor", "dim:int", "start:int", "length:int" },
  diag_embed = { "input:Tensor", "offset:int?", "dim1:int?", "dim2:int?" } })
for _, name in ipairs({ "select_scatter", "slice_scatter", "diagonal_scatter", "diag_embed", "narrow_copy" }) do install(name) end

-- ---- in-place randoms (torch.rand / randn, so torch.manual_seed reproduces them) ----

local function uniform64(self) return torch.rand(self:size(), { dtype = torch.float64, device = self.device }) end

local function fill_with(self, v)
  local _ <close> = torch.no_grad()
  self:copy_(v:to(self.dtype))
  return self
end

local function need_float(self, fname)
  if not self:is_floating_point() then fail("\"%s\" not implemented for '%s'", fname, pytype_name(self.dtype)) end
end

-- exclusive upper bounds of random_(): 2^mantissa + 1 for floating dtypes, max + 1 for integers
local top = { int64 = 2.0 ^ 63, int32 = 2.0 ^ 31, int16 = 2 ^ 15, int8 = 2 ^ 7, uint8 = 256, bool = 2, float64 = 2 ^ 53 + 1, float32 = 2 ^ 24 + 1,
  float16 = 2 ^ 11 + 1, bfloat16 = 2 ^ 8 + 1 }

-- random_(from, to) in [from, to); random_(to) in [0, to); random_() in [0, 2^mantissa]
-- for floating dtypes, [0, max] for integer ones
-- a keyword table as the first argument of an in-place sampler: its values by name (PyTorch's keywords)
local function sampler_keywords(fname, names, first, ...)
  if not U.is_opts(first) then return first, ... end
  local spec = {}
  for i, n in ipairs(names) do spec[i] = { n } end
  spec[#spec + 1] = { "generator" }
  local o = U.parse(fname, spec, first)
  local out = {}
  for i, n in ipairs(names) do out[i] = o[n] end
  return table.unpack(out, 1, #names)
end

function Tensor:random_(...)
  local from, to = sampler_keywords("random_", { "from", "to" }, ...)
  if from == nil and to ~= nil then from = 0 end
  if from ~= nil and to == nil then from, to = 0, from end
  if from == nil then from, to = 0, top[(tostring(self.dtype):gsub("^torch%.", ""))] or 2 ^ 24 + 1 end
  if from >= to then
    fail("random_ expects 'from' to be less than 'to', but got from=%s >= to_exclusive=%s", tostring(from), tostring(to))
  end
  local span = (to + 0.0) - from
  local v = (uniform64(self) * span):floor()
  if span < 2 ^ 53 then v = v:clamp(0, span - 1) end
  return fill_with(self, v + from)
end

function Tensor:exponential_(...)
  local lambd = sampler_keywords("exponential_", { "lambd" }, ...) or 1
  need_float(self, "exponential_")
  if not (lambd > 0) then fail("exponential_ expects lambda > 0.0, but found lambda=%s", U.pyfloat(lambd)) end
  return fill_with(self, -((-uniform64(self)):log1p()) / lambd)
end

function Tensor:geometric_(p)
  if not (type(p) == "number" and p > 0 and p < 1) then fail("geometric_ expects p to be in (0, 1), got p=%s", tostring(p)) end
  -- P(k) = (1-p)^(k-1) p, k = 1, 2, ...
  return fill_with(self, ((-uniform64(self)):log1p() / math.log(1 - p)):ceil():clamp(1))
end

function Tensor:cauchy_(median, sigma)
  median, sigma = median or 0, sigma or 1
  need_float(self, "cauchy_")
  if not (sigma > 0) then fail("cauchy_ expects sigma > 0.0, but found sigma=%s", U.pyfloat(sigma)) end
  return fill_with(self, ((uniform64(self) - 0.5) * math.pi):tan() * sigma + median)
end

function Tensor:log_normal_(mean, std)
  mean, std = mean or 1, std or 2
  need_float(self, "log_normal_")
  if not (std > 0) then fail("log_normal_ expects std > 0.0, but found std=%s", U.pyfloat(std)) end
  local z = torch.randn(self:size(), { dtype = torch.float64, device = self.device })
  return fill_with(self, (z * std + mean):exp())
end

function Tensor:bernoulli_(...)
  local p = sampler_keywords("bernoulli_", { "p" }, ...)
  if p == nil then p = 0.5 end
  if torch.is_tensor(p) then
    if p:numel() > 0 and (p:lt(0):any():item() or p:gt(1):any():item()) then fail("bernoulli_ expects p to be in [0, 1]") end
    p = p:to(torch.float64):expand(self:size())
  elseif not (p >= 0 and p <= 1) then
    fail("bernoulli_ expects p to be in [0, 1], but got p=%s", U.pyfloat(p))
  end
  return fill_with(self, uniform64(self):lt(p))
end

-- ---- math ----

function Tensor:addmm_(mat1, mat2, opts)
  return inplace(self, function(s) return torch.addmm(s, mat1, mat2, opts) end)
end
U.check_all(Tensor, {
  random_ = { "self", "from:Number?", "to:Number?" }, exponential_ = { "self", "lambd:Number?" },
  cauchy_ = { "self", "median:Number?", "sigma:Number?" }, log_normal_ = { "self", "mean:Number?", "std:Number?" },
  bernoulli_ = { "self", "p:Tensor|Number?" }, addmm_ = { "self", "mat1:Tensor", "mat2:Tensor" },
})
for _, name in ipairs({ "lerp", "tril", "triu", "nan_to_num", "copysign" }) do
  Tensor[name .. "_"] = function(self, ...)
    local args = table.pack(...)
    return inplace(self, function(s) return torch[name](s, table.unpack(args, 1, args.n)) end)
  end
end

-- inner(a, b): sums over the last dims of both; out shape a.shape[:-1] + b.shape[:-1]
function torch.inner(a, b)
  check_tensor("inner", "input", 1, a)
  check_tensor("inner", "other", 2, b)
  if a:dim() == 0 or b:dim() == 0 then return a * b end
  local as, bs = shape_list(a), shape_list(b)
  if as[#as] ~= bs[#bs] then
    fail("inner() the last dimension must match on both input tensors but got shapes %s and %s", shape_str(as), shape_str(bs))
  end
  local k = as[#as]
  local out = a:reshape(-1, k):matmul(b:reshape(-1, k):t())
  local shape = {}
  for i = 1, #as - 1 do shape[#shape + 1] = as[i] end
  for i = 1, #bs - 1 do shape[#shape + 1] = bs[i] end
  return out:reshape(shape)
end

function torch.vdot(a, b)
  check_tensor("vdot", "input", 1, a)
  check_tensor("vdot", "other", 2, b)
  if a:dim() ~= 1 or b:dim() ~= 1 then fail("1D tensors expected, but got %dD and %dD tensors", a:dim(), b:dim()) end
  if a:numel() ~= b:numel() then
    fail("inconsistent tensor size, expected tensor [%d] and src [%d] to have the same number of elements, but got %d and %d elements respectively",
      a:numel(), b:numel(), a:numel(), b:numel())
  end
  if a.dtype ~= b.dtype then fail("vdot : expected both vectors to have same dtype, but found %s and %s", pytype_name(a.dtype), pytype_name(b.dtype)) end
  return (a * b):sum()
end

local function check_square(fname, A)
  if A:dim() < 2 then fail("%s: The input tensor A must have at least 2 dimensions.", fname) end
  if A:size(-1) ~= A:size(-2) then
    fail("%s: A must be batches of square matrices, but they are %d by %d matrices", fname, A:size(-2), A:size(-1))
  end
end

local function eye_like(A)
  local n = A:size(-1)
  return torch.eye(n, { dtype = A.dtype, device = A.device }):expand(A:size())
end

-- matrix_power(A, n): by squaring; n < 0 inverts first
function torch.matrix_power(A, n)
  check_tensor("matrix_power", "input", 1, A)
  check_square("linalg.matrix_power", A)
  n = U.check_int("matrix_power", "n", n)
  if n == 0 then return eye_like(A):clone() end
  if n < 0 then A, n = torch.linalg.inv(A), -n end
  local result, base = nil, A
  while n > 0 do
    if n % 2 == 1 then result = result and result:matmul(base) or base end
    n = n // 2
    if n > 0 then base = base:matmul(base) end
  end
  return result
end
torch.linalg.matrix_power = torch.matrix_power

-- matrix_exp(A): exp(A / 2^s) by an 18-term Taylor series (|A / 2^s|_1 <= 1/2), squared s times
function torch.matrix_exp(A)
  check_tensor("matrix_exp", "input", 1, A)
  check_square("linalg.matrix_exp", A)
  if not A:is_floating_point() then fail("linalg.matrix_exp: Expected a floating point or complex tensor as input. Got %s", pytype_name(A.dtype)) end
  if A:numel() == 0 then return A:clone() end
  local norm = A:detach():abs():sum(-2):max():item()
  local s = 0
  if norm > 0.5 then s = math.ceil(math.log(norm / 0.5, 2)) end
  local X = A / (2 ^ s)
  local I = eye_like(A)
  local P = I
  for k = 18, 1, -1 do P = I + X:matmul(P) / k end
  for _ = 1, s do P = P:matmul(P) end
  return P
end
torch.linalg.matrix_exp = torch.matrix_exp

-- renorm(x, p, dim, maxnorm): each slice along dim with p-norm above maxnorm scaled down to it
function torch.renorm(x, p, dim, maxnorm)
  check_tensor("renorm", "input", 1, x)
  if not (p > 0) then fail("renorm: non-positive-norm not supported") end
  if not (maxnorm >= 0) then fail("renorm: expected maxnorm to be >= 0 but got %s", U.pyfloat(maxnorm)) end
  if x:dim() <= 1 then fail("renorm: input needs at least 2 dimensions, got %d dimensions", x:dim()) end
  dim = wrap_dim(dim, x:dim())
  local rows = x:movedim(dim, 0):reshape(x:size(dim), -1)
  local norm = p == math.huge and rows:abs():amax(1) or torch.linalg.vector_norm(rows, p, { dim = 1 })
  local factor = torch.where(norm:gt(maxnorm), maxnorm / (norm + 1e-7), torch.ones_like(norm))
  local view = {}
  for d = 0, x:dim() - 1 do view[d + 1] = d == dim and x:size(dim) or 1 end
  return x * factor:reshape(view)
end

-- dist(a, b, p=2): the p-norm of a - b
function torch.dist(a, b, p)
  check_tensor("dist", "input", 1, a)
  check_tensor("dist", "other", 2, b)
  return torch.linalg.vector_norm(a - b, p or 2)
end

-- unique_consecutive(x, return_inverse=false, return_counts=false, dim=nil): runs of equal
-- entries (or slices along dim) collapsed to one; returns output[, inverse][, counts]
function torch.unique_consecutive(x, ...)
  check_tensor("unique_consecutive", "input", 1, x)
  local o = U.parse("unique_consecutive", { { "return_inverse", false }, { "return_counts", false }, { "dim" } }, ...)
  local rows, dim
  if o.dim == nil then
    rows = x:reshape(-1, 1)
  else
    dim = wrap_dim(o.dim, x:dim())
    rows = x:movedim(dim, 0):reshape(x:dim() == 0 and 1 or x:size(dim), -1)
  end
  local n = rows:size(0)
  local starts, inverse
  if n == 0 then
    starts, inverse = torch.zeros(0, { dtype = i64, device = x.device }), torch.zeros(0, { dtype = i64, device = x.device })
  else
    local change = torch.ones(n, { dtype = torch.bool, device = x.device })
    if n > 1 then
      local diff = rows:narrow(0, 1, n - 1):ne(rows:narrow(0, 0, n - 1))
      if rows:size(1) > 0 then diff = diff:any(1) else diff = diff:reshape(n - 1, -1):any(1) end
      change = torch.cat({ change:narrow(0, 0, 1), diff }, 0)
    end
    starts = change:nonzero():reshape(-1)
    inverse = change:to(i64):cumsum(0) - 1
  end
  local output
  if dim == nil then
    output = x:reshape(-1):index_select(0, starts)
    inverse = inverse:reshape(x:size())
  else
    output = x:index_select(dim, starts)
  end
  local res = { output }
  if o.return_inverse then res[#res + 1] = inverse end
  if o.return_counts then
    local ends = torch.cat({ starts:narrow(0, 1, math.max(starts:numel() - 1, 0)), torch.tensor({ n }, { device = x.device }) }, 0)
    res[#res + 1] = starts:numel() == 0 and starts:clone() or ends - starts
  end
  return table.unpack(res)
end

function torch.is_nonzero(x)
  check_tensor("is_nonzero", "input", 1, x)
  if x:numel() == 0 then fail("Boolean value of Tensor with no values is ambiguous") end
  if x:numel() > 1 then fail("Boolean value of Tensor with more than one value is ambiguous") end
  local v = x:reshape(-1)[0]:item()
  if type(v) == "boolean" then return v end
  return v ~= 0
end

function torch.isreal(x)
  check_tensor("isreal", "input", 1, x)
  if x:is_complex() then return x.imag:eq(0) end
  return torch.ones(x:size(), { dtype = torch.bool, device = x.device })
end

local function int_pair(fname, a, b)
  check_tensor(fname, "input", 1, a)
  if not torch.is_tensor(b) then b = torch.full({}, b, { dtype = a.dtype, device = a.device }) end
  for _, t in ipairs({ a, b }) do
    if t:is_floating_point() or t.dtype == torch.bool then fail("\"%s_cpu\" not implemented for '%s'", fname, pytype_name(t.dtype)) end
  end
  return a, b
end

-- gcd by Euclid's loop on the whole tensor (until every remainder is 0)
function torch.gcd(a, b)
  a, b = int_pair("gcd", a, b)
  a, b = torch.broadcast_tensors(a:abs(), b:abs())
  local zero = torch.zeros_like(b)
  while b:ne(0):any():item() do
    local nz = b:ne(0)
    local safe = torch.where(nz, b, torch.ones_like(b))
    a, b = torch.where(nz, b, a), torch.where(nz, a:remainder(safe), zero)
  end
  return a
end

function torch.lcm(a, b)
  a, b = int_pair("lcm", a, b)
  local g = torch.gcd(a, b)
  local safe = torch.where(g:eq(0), torch.ones_like(g), g)
  return torch.where(g:eq(0), torch.zeros_like(g), torch.floor_divide(a, safe) * b):abs()
end

U.check_all(torch, { renorm = { "input:Tensor", "p:Number", "dim:int", "maxnorm:Number" }, dist = {} })
for _, name in ipairs({ "inner", "vdot", "matrix_power", "matrix_exp", "dist", "unique_consecutive", "is_nonzero",
  "isreal", "gcd", "lcm" }) do install(name) end
install("renorm", true)
Tensor.gcd_ = function(self, other) return inplace(self, function(s) return torch.gcd(s, other) end) end
Tensor.lcm_ = function(self, other) return inplace(self, function(s) return torch.lcm(s, other) end) end

return torch
