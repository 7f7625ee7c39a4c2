-- More of PyTorch's tensor functions, written as compositions of the engine's ops
-- (index_select, narrow, cat, where, amax, bmm, ...), so they run on every device
-- and autograd differentiates them: flip, fliplr, flipud, roll, tril, triu, diag,
-- diagonal, trace, logsumexp, lerp, nonzero, masked_select, repeat_interleave,
-- repeat, tile, mv, baddbmm, addmv, addr, clamp_min, clamp_max.
-- Each is torch.<name>(x, ...) and the method x:<name>(...) (x["repeat"](x, ...):
-- `repeat` is a Lua keyword).
local torch = require "torch"
local U = require "nn_util"
local Tensor = torch.Tensor

local M = {}

-- An error at the caller's line, past the library's own frames.
local fail = require("nn_util").errorf

local check_tensor = U.check_tensor

local function check_int(fname, name, v)
  local i = math.tointeger(v)
  if i == nil then fail("%s(): argument '%s' must be int, not %s", fname, name, U.typename(v)) end
  return i
end

-- An int, a list of ints or a torch.Size as a Lua list of ints.
local function int_list(fname, name, v)
  if type(v) == "number" then return { check_int(fname, name, v) } end
  if type(v) == "userdata" or (type(v) == "table" and getmetatable(v) ~= nil) then
    local ok, t = pcall(function() return v:totable() end)
    if ok then v = t end
  end
  if type(v) ~= "table" then fail("%s(): argument '%s' must be tuple of ints, not %s", fname, name, U.typename(v)) end
  local out = {}
  for i, e in ipairs(v) do
    out[i] = math.tointeger(e)
    if out[i] == nil then fail("%s(): argument '%s' must be tuple of ints, but found element of type %s at pos %d",
      fname, name, U.typename(e), i - 1) end
  end
  return out
end

-- dim wrapped into [0, nd) (a 0-dim tensor accepts 0 and -1, as PyTorch)
local function wrap_dim(dim, nd)
  local span = math.max(nd, 1)
  if dim < -span or dim >= span then
    fail("Dimension out of range (expected to be in range of [%d, %d], but got %d)", -span, span - 1, dim)
  end
  return dim < 0 and dim + span or dim
end

local function long_arange(n, x) return torch.arange(n, { dtype = torch.int64, device = x.device }) end

-- x with the elements where keep is false set to zero (keep broadcasts against x)
local function zero_where_not(x, keep)
  return torch.where(keep, x, torch.zeros({}, { dtype = x.dtype, device = x.device }))
end

-- U.parse, but a leading empty table is an empty list (flip(x, {})), not a keyword table
local function parse_list_first(fname, spec, first, ...)
  if type(first) == "table" and getmetatable(first) == nil and next(first) == nil then
    local o = U.parse(fname, { table.unpack(spec, 2) }, ...)
    o[spec[1][1]] = first
    return o
  end
  return U.parse(fname, spec, first, ...)
end

local function shape_of(x) return x.shape:totable() end

-- ---- flip, fliplr, flipud, roll ----

function M.flip(x, ...)
  check_tensor("flip", "input", 1, x)
  local o = parse_list_first("flip", { { "dims", U.REQUIRED } }, ...)
  local dims, seen, nd = int_list("flip", "dims", o.dims), {}, x:dim()
  for i, d in ipairs(dims) do
    d = wrap_dim(d, nd)
    if seen[d] then fail("dim %d appears multiple times in the list of dims", d) end
    seen[d], dims[i] = true, d
  end
  local out = x
  if nd > 0 then
    for _, d in ipairs(dims) do
      local n = x:size(d)
      if n > 1 then out = out:index_select(d, torch.arange(n - 1, -1, -1, { dtype = torch.int64, device = x.device })) end
    end
  end
  return out == x and x:clone() or out
end

function M.fliplr(x)
  check_tensor("fliplr", "input", 1, x)
  if x:dim() < 2 then fail("Input must be >= 2-d.") end
  return M.flip(x, { 1 })
end

function M.flipud(x)
  check_tensor("flipud", "input", 1, x)
  if x:dim() < 1 then fail("Input must be >= 1-d.") end
  return M.flip(x, { 0 })
end

local function roll_dim(x, shift, d)
  local n = x:size(d)
  if n == 0 then return x end
  shift = shift % n -- Lua's % is Python's: in [0, n)
  if shift == 0 then return x end
  return torch.cat({ x:narrow(d, n - shift, shift), x:narrow(d, 0, n - shift) }, d)
end

function M.roll(x, ...)
  check_tensor("roll", "input", 1, x)
  local o = parse_list_first("roll", { { "shifts", U.REQUIRED }, { "dims", nil } }, ...)
  local shifts = int_list("roll", "shifts", o.shifts)
  local dims = o.dims == nil and {} or int_list("roll", "dims", o.dims)
  if #shifts == 0 then fail("`shifts` required") end
  if #dims == 0 and #shifts == 1 then
    return roll_dim(x:reshape(-1), shifts[1], 0):reshape(shape_of(x))
  end
  if #shifts ~= #dims then fail("shifts and dimensions must align. shifts: %d, dims:%d", #shifts, #dims) end
  local out = x
  for i, d in ipairs(dims) do
    d = wrap_dim(d, x:dim())
    if x:dim() > 0 then out = roll_dim(out, shifts[i], d) end
  end
  return out == x and x:clone() or out
end

-- ---- tril, triu, diag, diagonal, trace ----

-- keep(rows, cols) -> bool tensor [m, n] from the row and column index columns
local function triangle(fname, x, keep, ...)
  check_tensor(fname, "input", 1, x)
  local o = U.parse(fname, { { "diagonal", 0 } }, ...)
  local k = check_int(fname, "diagonal", o.diagonal)
  if x:dim() < 2 then fail("%s: input tensor must have at least 2 dimensions", fname) end
  local m, n = x:size(-2), x:size(-1)
  local offset = long_arange(n, x):view(1, n) - long_arange(m, x):view(m, 1) -- col - row
  return zero_where_not(x, keep(offset, k))
end

function M.tril(x, ...) return triangle("tril", x, Tensor.le, ...) end
function M.triu(x, ...) return triangle("triu", x, Tensor.ge, ...) end

-- The diagonal over dims dim1, dim2 (moved to the end), a view as PyTorch's
function M.diagonal(x, ...)
  check_tensor("diagonal", "input", 1, x)
  local o = U.parse("diagonal", { { "offset", 0 }, { "dim1", 0 }, { "dim2", 1 } }, ...)
  local k = check_int("diagonal", "offset", o.offset)
  local nd = x:dim()
  if nd < 2 then fail("diagonal(): expected a tensor with at least 2 dimensions, got %d", nd) end
  local d1 = wrap_dim(check_int("diagonal", "dim1", o.dim1), nd)
  local d2 = wrap_dim(check_int("diagonal", "dim2", o.dim2), nd)
  if d1 == d2 then fail("diagonal dimensions cannot be identical %d, %d", o.dim1, o.dim2) end
  return torch._diagonal(x, k, d1, d2)
end

function M.diag(x, ...)
  check_tensor("diag", "input", 1, x)
  local o = U.parse("diag", { { "diagonal", 0 } }, ...)
  local k = check_int("diag", "diagonal", o.diagonal)
  if x:dim() == 2 then return M.diagonal(x, k):clone() end -- a copy, as PyTorch's diag
  if x:dim() ~= 1 then fail("diag(): Supports 1D or 2D tensors. Got %dD", x:dim()) end
  local n, a = x:size(0), math.abs(k)
  local size = n + a
  local v = a == 0 and x or torch.cat({ x, torch.zeros(a, { dtype = x.dtype, device = x.device }) })
  -- v[i] sits at (i, i + k) when k >= 0 (constant along a row), at (i - k, i) otherwise
  local vv = k >= 0 and v:view(size, 1) or v:view(1, size)
  local offset = long_arange(size, x):view(1, size) - long_arange(size, x):view(size, 1)
  return zero_where_not(vv:expand(size, size), offset:eq(k))
end

function M.trace(x)
  check_tensor("trace", "input", 1, x)
  if x:dim() ~= 2 then fail("trace: expected a matrix, but got tensor with dim %d", x:dim()) end
  return M.diagonal(x):sum()
end

-- ---- logsumexp, lerp ----

-- log(sum(exp(x))) over dim, shifted by the (detached) max; a max of +-inf shifts by 0,
-- as PyTorch, so all -inf rows give -inf and +inf rows +inf. Integer inputs give floats.
function M.logsumexp(x, ...)
  check_tensor("logsumexp", "input", 1, x)
  local o = parse_list_first("logsumexp", { { "dim", U.REQUIRED }, { "keepdim", false } }, ...)
  local dims = int_list("logsumexp", "dim", o.dim)
  local nd = x:dim()
  for i, d in ipairs(dims) do dims[i] = wrap_dim(d, nd) end
  if #dims == 0 then for d = 0, nd - 1 do dims[#dims + 1] = d end end
  if not x:is_floating_point() then x = x:to(torch.get_default_dtype()) end
  if nd == 0 then return x:clone() end
  local dim_arg = #dims == 1 and dims[1] or dims
  if x:numel() == 0 then return x:exp():sum(dim_arg, o.keepdim):log() end
  local m
  do
    local _ <close> = torch.no_grad()
    m = x:amax(dim_arg, true)
    m = m:masked_fill(m:abs():eq(math.huge), 0)
  end
  local out = (x - m):exp():sum(dim_arg, true):log() + m
  if not o.keepdim then
    table.sort(dims, function(a, b) return a > b end)
    for _, d in ipairs(dims) do out = out:squeeze(d) end
  end
  return out
end

local function dtype_name(t) return U.scalar_name(t.dtype) end
local function py_dtype(t) return tostring(t.dtype):sub(7):gsub("float32", "float"):gsub("float64", "double") end

-- input + weight * (end - input); from the end side where |weight| >= 0.5 (PyTorch's accuracy rule)
function M.lerp(x, ...)
  check_tensor("lerp", "input", 1, x)
  local o = U.parse("lerp", { { "end", U.REQUIRED }, { "weight", U.REQUIRED } }, ...)
  local e, w = check_tensor("lerp", "end", 2, o["end"]), o.weight
  if not x:is_floating_point() then fail("\"lerp_kernel_scalar\" not implemented for '%s'", dtype_name(x)) end
  if e.dtype ~= x.dtype then fail("expected dtype %s for `end` but got dtype %s", py_dtype(x), py_dtype(e)) end
  local diff = e - x
  if type(w) == "number" then
    if math.abs(w) < 0.5 then return x + diff * w end
    return e - diff * (1 - w)
  end
  check_tensor("lerp", "weight", 3, w)
  if w.dtype ~= x.dtype then fail("expected dtype %s for `weight` but got dtype %s", py_dtype(x), py_dtype(w)) end
  return torch.where(w:abs():lt(0.5), x + diff * w, e - diff * (1 - w))
end

-- ---- nonzero, masked_select ----

-- [n, ndim] int64 coordinates of the nonzero elements, in row-major order; a GPU input
-- syncs (the count decides the size). as_tuple: a Lua list of ndim 1-D tensors.
function M.nonzero(x, ...)
  check_tensor("nonzero", "input", 1, x)
  local o = U.parse("nonzero", { { "as_tuple", false } }, ...)
  local _ <close> = torch.no_grad()
  local nd = x:dim()
  local mask = (x.dtype == torch.bool and x or x:ne(0)):reshape(-1)
  local pos = long_arange(mask:numel(), x)[mask]
  local cols, suffix = {}, 1
  for d = nd - 1, 0, -1 do
    local size = x:size(d)
    -- (pos mod suffix*size - pos mod suffix) / suffix, exact in float64 below 2^53
    local r = suffix * size == 0 and pos or pos:remainder(suffix * size)
    local below = suffix == 1 and 0 or pos:remainder(suffix)
    cols[d + 1] = suffix == 1 and r or (r - below):to(torch.float64):div(suffix):to(torch.int64)
    suffix = suffix * size
  end
  if o.as_tuple then
    if nd == 0 then return { pos } end
    return cols
  end
  if nd == 0 then return torch.zeros(pos:numel(), 0, { dtype = torch.int64, device = x.device }) end
  return torch.stack(cols, 1)
end

local function broadcast_shape(a, b)
  local sa, sb, out = shape_of(a), shape_of(b), {}
  local n = math.max(#sa, #sb)
  for i = 1, n do
    local x, y = sa[#sa - n + i] or 1, sb[#sb - n + i] or 1
    if x ~= y and x ~= 1 and y ~= 1 then
      fail("The size of tensor a (%d) must match the size of tensor b (%d) at non-singleton dimension %d", x, y, i - 1)
    end
    out[i] = x == 1 and y or x
  end
  return out
end

function M.masked_select(x, ...)
  check_tensor("masked_select", "input", 1, x)
  local o = U.parse("masked_select", { { "mask", U.REQUIRED } }, ...)
  local mask = check_tensor("masked_select", "mask", 2, o.mask)
  if mask.dtype ~= torch.bool then fail("masked_select: expected BoolTensor for mask") end
  local shape = broadcast_shape(x, mask)
  if #shape == 0 then shape = { 1 } end
  return x:expand(shape)[mask:expand(shape)]
end

-- ---- repeat_interleave, repeat, tile ----

function M.repeat_interleave(x, ...)
  check_tensor("repeat_interleave", "input", 1, x)
  local o = U.parse("repeat_interleave", { { "repeats", nil }, { "dim", nil }, { "output_size", nil } }, ...)
  if o.repeats == nil then -- torch.repeat_interleave(repeats): indices 0.. repeated
    if x:dim() ~= 1 then fail("repeat_interleave only accept 1D vector as repeat") end
    return M.repeat_interleave(long_arange(x:size(0), x), x, 0)
  end
  local dim
  if o.dim == nil then x, dim = x:reshape(-1), 0
  else dim = wrap_dim(check_int("repeat_interleave", "dim", o.dim), x:dim()) end
  if x:dim() == 0 then x = x:reshape(1) end
  local n, r = x:size(dim), o.repeats
  local idx
  if type(r) == "number" then
    r = check_int("repeat_interleave", "repeats", r)
    if r < 0 then fail("repeats can not be negative") end
    idx = long_arange(n, x):view(n, 1):expand(n, r):reshape(-1)
  else
    check_tensor("repeat_interleave", "repeats", 2, r)
    if r:dim() > 1 then fail("repeat_interleave only accept 1D vector as repeat") end
    if r.dtype ~= torch.int64 and r.dtype ~= torch.int32 then
      fail("repeats has to be Long or Int tensor")
    end
    local counts = r:reshape(-1):tolist()
    if #counts == 1 then for i = 2, n do counts[i] = counts[1] end
    elseif #counts ~= n then
      fail("repeats must have the same size as input along dim, but got repeats.size(0) = %d and input.size(%d) = %d",
        #counts, dim, n)
    end
    local list = {}
    for i, c in ipairs(counts) do
      if c < 0 then fail("repeats can not be negative") end
      for _ = 1, c do list[#list + 1] = i - 1 end
    end
    idx = torch.tensor(list, { dtype = torch.int64 }):to(x.device)
  end
  return x:index_select(dim, idx)
end

local function sizes_arg(fname, ...)
  local first = ...
  if select("#", ...) == 1 and type(first) ~= "number" then return int_list(fname, "repeats", first) end
  local out = {}
  for i = 1, select("#", ...) do out[i] = check_int(fname, "repeats", (select(i, ...))) end
  return out
end

-- x:repeat(2, 3): tiles x; sizes may have more dims than x (leading ones added)
local function repeat_(x, ...)
  check_tensor("repeat", "input", 1, x)
  local reps = sizes_arg("repeat", ...)
  local nd = x:dim()
  if #reps < nd then
    fail("Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor")
  end
  local shape = shape_of(x)
  for _ = 1, #reps - nd do table.insert(shape, 1, 1) end
  local view, expanded, final = {}, {}, {}
  for i, r in ipairs(reps) do
    if r < 0 then fail("Trying to create tensor with negative dimension %d: [%s]", r,
      table.concat(reps, ", ")) end
    view[#view + 1], view[#view + 2] = 1, shape[i]
    expanded[#expanded + 1], expanded[#expanded + 2] = r, shape[i]
    final[i] = r * shape[i]
  end
  if #reps == 0 then return x:clone() end
  -- a copy, as PyTorch's: reshaping the expanded tensor may give a stride-0 view of x
  return x:reshape(view):expand(expanded):clone():reshape(final)
end
M["repeat"] = repeat_

function M.tile(x, ...)
  check_tensor("tile", "input", 1, x)
  local reps = sizes_arg("tile", ...)
  while #reps < x:dim() do table.insert(reps, 1, 1) end
  return repeat_(x, reps)
end

-- ---- mv, baddbmm, addmv, addr ----

function M.mv(a, v)
  check_tensor("mv", "input", 1, a)
  check_tensor("mv", "vec", 2, v)
  if a:dim() ~= 2 or v:dim() ~= 1 then
    fail("vector + matrix @ vector expected, got %d, %d, %d", 1, a:dim(), v:dim())
  end
  if a:size(1) ~= v:size(0) then
    fail("size mismatch, got input (%d), mat (%dx%d), vec (%d)", a:size(0), a:size(0), a:size(1), v:size(0))
  end
  return U.call(torch.matmul, a, v)
end

-- beta * input + alpha * product (input ignored, nan and all, when beta is 0, as PyTorch)
local function add_scaled(input, prod, beta, alpha)
  if alpha ~= 1 then prod = prod * alpha end
  if beta == 0 then return prod + torch.zeros(shape_of(input), { dtype = prod.dtype, device = prod.device }) end
  return (beta == 1 and input or input * beta) + prod
end

local blas_spec = function(a, b) return { { a, U.REQUIRED }, { b, U.REQUIRED }, { "beta", 1 }, { "alpha", 1 } } end

function M.baddbmm(input, ...)
  check_tensor("baddbmm", "input", 1, input)
  local o = U.parse("baddbmm", blas_spec("batch1", "batch2"), ...)
  local b1 = check_tensor("baddbmm", "batch1", 2, o.batch1)
  local b2 = check_tensor("baddbmm", "batch2", 3, o.batch2)
  if b1:dim() ~= 3 then fail("batch1 must be a 3D tensor") end
  if b2:dim() ~= 3 then fail("batch2 must be a 3D tensor") end
  if b1:size(0) ~= b2:size(0) or b1:size(2) ~= b2:size(1) then
    fail("Expected size for first two dimensions of batch2 tensor to be: [%d, %d] but got: [%d, %d].",
      b1:size(0), b1:size(2), b2:size(0), b2:size(1))
  end
  return add_scaled(input, U.call(torch.bmm, b1, b2), o.beta, o.alpha)
end

function M.addmv(input, ...)
  check_tensor("addmv", "input", 1, input)
  local o = U.parse("addmv", blas_spec("mat", "vec"), ...)
  local mat = check_tensor("addmv", "mat", 2, o.mat)
  local vec = check_tensor("addmv", "vec", 3, o.vec)
  return add_scaled(input, M.mv(mat, vec), o.beta, o.alpha)
end

function M.addr(input, ...)
  check_tensor("addr", "input", 1, input)
  local o = U.parse("addr", blas_spec("vec1", "vec2"), ...)
  local v1 = check_tensor("addr", "vec1", 2, o.vec1)
  local v2 = check_tensor("addr", "vec2", 3, o.vec2)
  if v1:dim() ~= 1 then fail("addr: Expected 1-D argument vec1, but got %d-D", v1:dim()) end
  if v2:dim() ~= 1 then fail("addr: Expected 1-D argument vec2, but got %d-D", v2:dim()) end
  return add_scaled(input, v1:view(-1, 1) * v2:view(1, -1), o.beta, o.alpha)
end

-- ---- clamp_min, clamp_max ----

local function clamp_bound(fname, name, x, v, fn, inplace)
  check_tensor(fname, "input", 1, x)
  if torch.is_tensor(v) then
    U.check_broadcast(x, v)
    local r = fn(x, v)
    if inplace then return x:copy_(r) end
    return r
  end
  if type(v) ~= "number" then fail("%s(): argument '%s' must be Number, not %s", fname, name, U.typename(v)) end
  if name == "min" then return inplace and x:clamp_(v) or x:clamp(v) end
  return inplace and x:clamp_(nil, v) or x:clamp(nil, v)
end

function M.clamp_min(x, ...)
  local o = U.parse("clamp_min", { { "min", U.REQUIRED } }, ...)
  return clamp_bound("clamp_min", "min", x, o.min, torch.maximum, false)
end
function M.clamp_max(x, ...)
  local o = U.parse("clamp_max", { { "max", U.REQUIRED } }, ...)
  return clamp_bound("clamp_max", "max", x, o.max, torch.minimum, false)
end
function M.clamp_min_(x, ...)
  local o = U.parse("clamp_min_", { { "min", U.REQUIRED } }, ...)
  return clamp_bound("clamp_min_", "min", x, o.min, torch.maximum, true)
end
function M.clamp_max_(x, ...)
  local o = U.parse("clamp_max_", { { "max", U.REQUIRED } }, ...)
  return clamp_bound("clamp_max_", "max", x, o.max, torch.minimum, true)
end

-- install what is missing: torch.<name> (not the in-place ones) and the methods
local method_only = { clamp_min_ = true, clamp_max_ = true }
for name, f in pairs(M) do
  if not method_only[name] and torch[name] == nil then torch[name] = f end
  if Tensor[name] == nil then Tensor[name] = f end
end
