-- gather, scatter / scatter_ / scatter_add / scatter_add_, and the sorting family
-- (sort, argsort, msort, topk, kthvalue, median), as functions on torch and methods.
--
-- gather and scatter work on flat positions in a contiguous copy of self, computed
-- from the index with arange/mul/add on the index's device (no host round trip), then
-- index_select / index_add_: autograd comes from those ops. Sorting takes the
-- permutation from the engine's stable argsort (torch._argsort, engine/sort.c) and the
-- values by gather, so the values' gradient is gather's (a scatter into the indices).
local torch = require "torch"
local Tensor = torch.Tensor
local U = require "nn_util"

-- An error at the caller's line, past the library's own frames.
local fail = require("nn_util").errorf

local function shape_str(t)
  local s = t:size():totable()
  return "[" .. table.concat(s, ", ") .. "]"
end

local check_tensor = U.check_tensor

local wrap_dim = U.wrap_dim

local function dims(t) return math.max(t:dim(), 1) end
local function size_at(t, d) return t:dim() == 0 and 1 or t:size(d) end

-- Flat positions, in a contiguous tensor of shape `sizes`, of the entries of index
-- (int64, along dim): sum over d ~= dim of coordinate_d * stride_d, plus index * stride_dim.
local function flat_positions(index, dim, sizes)
  local nd = #sizes
  local ishape = {}
  for d = 0, nd - 1 do ishape[d + 1] = size_at(index, d) end
  local strides, s = {}, 1
  for d = nd - 1, 0, -1 do strides[d + 1] = s; s = s * sizes[d + 1] end
  local pos = index:reshape(ishape) * strides[dim + 1]
  for d = 0, nd - 1 do
    if d ~= dim and ishape[d + 1] > 1 then
      local view = {}
      for e = 1, nd do view[e] = 1 end
      view[d + 1] = ishape[d + 1]
      pos = pos + torch.arange(ishape[d + 1], { dtype = torch.int64, device = index.device }):mul(strides[d + 1]):view(view)
    end
  end
  return pos:reshape(-1)
end

-- Index entries outside [0, size): PyTorch's message on the CPU (the check reads the
-- index); on other devices the positions are made invalid so that index_select /
-- index_add_ fail when their kernel runs, without a sync here.
local function guard_range(fname, index, dim, size, pos)
  local bad = index:lt(0):logical_or(index:ge(size)):reshape(-1)
  if not index.is_cuda then
    if bad:any():item() then
      local vals, flags = index:reshape(-1):tolist(), bad:tolist()
      for i = 1, #flags do
        if flags[i] then fail("%s(): index %d is out of bounds for dimension %d with size %d", fname, vals[i], dim, size) end
      end
    end
    return pos
  end
  return torch.where(bad, -1, pos)
end

local function check_index(fname, self, index)
  check_tensor(fname, "index", 3, index)
  if index.dtype ~= torch.int64 then fail("%s(): Expected dtype int64 for index", fname) end
  if index.device ~= self.device then
    fail("%s(): Expected all tensors to be on the same device, but found self on %s and index on %s", fname,
      tostring(self.device), tostring(index.device))
  end
  if dims(index) ~= dims(self) and index:numel() > 0 then
    fail("Index tensor must have the same number of dimensions as %s tensor", fname == "gather" and "input" or "self")
  end
end

local function sizes_of(t)
  local s = {}
  for d = 0, dims(t) - 1 do s[d + 1] = size_at(t, d) end
  return s
end

-- torch.gather(input, dim, index) / x:gather(dim, index): out[i][j] = x[index[i][j]][j] (dim 0)
function torch.gather(x, dim, index, opts)
  check_tensor("gather", "input", 1, x)
  if type(opts) == "table" and opts.sparse_grad then fail("gather(): sparse_grad is not supported") end
  check_index("gather", x, index)
  dim = wrap_dim(dim, x:dim())
  if index:numel() == 0 then return torch.empty(index:size(), { dtype = x.dtype, device = x.device }) end
  for d = 0, dims(x) - 1 do
    if d ~= dim and size_at(index, d) > size_at(x, d) then
      fail("Size does not match at dimension %d expected index %s to be no larger than self %s apart from dimension %d",
        d, shape_str(index), shape_str(x), dim)
    end
  end
  local sizes = sizes_of(x)
  local pos = guard_range("gather", index, dim, sizes[dim + 1], flat_positions(index, dim, sizes))
  return x:contiguous():reshape(-1):index_select(0, pos):view(index:size())
end
Tensor.gather = torch.gather

-- The work of scatter / scatter_add on a fresh contiguous result (autograd through
-- where / index_select / index_add_). add: sum duplicates; otherwise the last one wins.
local function scatter_impl(fname, x, dim, index, src, add)
  check_tensor(fname, "self", 1, x)
  check_index(fname, x, index)
  dim = wrap_dim(dim, x:dim())
  local is_value = not torch.is_tensor(src)
  if is_value and type(src) ~= "number" and type(src) ~= "boolean" then
    fail("%s(): argument 'src' (position 3) must be Tensor or Number, not %s", fname, U.typename(src))
  end
  if add and is_value then fail("%s(): argument 'src' (position 3) must be Tensor, not %s", fname, U.typename(src)) end
  if not is_value then
    if src.dtype ~= x.dtype then fail("%s(): Expected self.dtype to be equal to src.dtype", fname) end
    if src.device ~= x.device then
      fail("%s(): Expected all tensors to be on the same device, but found self on %s and src on %s", fname,
        tostring(x.device), tostring(src.device))
    end
    if dims(src) ~= dims(x) and index:numel() > 0 then
      fail("Index tensor must have the same number of dimensions as src tensor")
    end
  end
  local flat = x:contiguous():reshape(-1):clone()
  if index:numel() == 0 then return flat:view(x:size()) end
  for d = 0, dims(x) - 1 do
    local bad_self = d ~= dim and size_at(index, d) > size_at(x, d)
    local bad_src = not is_value and size_at(index, d) > size_at(src, d)
    if bad_self or bad_src then
      fail("Expected index %s to be no larger than self %s apart from dimension %d%s", shape_str(index), shape_str(x), dim,
        is_value and "" or " and to be no larger size than src " .. shape_str(src))
    end
  end
  local sizes = sizes_of(x)
  local pos = guard_range(fname, index, dim, sizes[dim + 1], flat_positions(index, dim, sizes))
  local vals
  if is_value then
    vals = torch.full({ pos:size(0) }, src, { dtype = x.dtype, device = x.device })
  else
    vals = src
    if src:dim() > 0 then
      for d = 0, src:dim() - 1 do vals = vals:narrow(d, 0, size_at(index, d)) end
    end
    vals = vals:reshape(-1)
  end
  if add then return flat:index_add_(0, pos, vals):view(x:size()) end
  -- scatter: with repeated positions only one value may land (index_add_ would sum
  -- them). Positions repeat only if index.size(dim) > 1; then keep the last entry for
  -- each position, found with a stable sort of the positions (a host sync on CUDA).
  if size_at(index, dim) > 1 then
    local perm = torch._argsort(pos, 0, false)
    local sp = pos:index_select(0, perm)
    local n = sp:size(0)
    local last = torch.ones(n, { dtype = torch.bool, device = pos.device })
    if n > 1 then last:narrow(0, 0, n - 1):copy_(sp:narrow(0, 0, n - 1):ne(sp:narrow(0, 1, n - 1))) end
    local keep = perm[last]
    pos, vals = pos:index_select(0, keep), vals:index_select(0, keep)
  end
  local hit = torch.zeros(flat:size(0), { dtype = torch.int64, device = x.device })
  hit:index_add_(0, pos, torch.ones(pos:size(0), { dtype = torch.int64, device = x.device }))
  local zero = torch.zeros({}, { dtype = x.dtype, device = x.device })
  return torch.where(hit:gt(0), zero, flat):index_add_(0, pos, vals):view(x:size())
end

local function check_reduce(fname, opts)
  if opts ~= nil then
    if type(opts) ~= "table" then fail("%s(): unexpected argument %s", fname, U.typename(opts)) end
    for k in pairs(opts) do
      if k == "reduce" then fail("%s(): the reduce argument is not supported", fname) end
      fail("%s() got an unexpected keyword argument '%s'", fname, tostring(k))
    end
  end
end

-- scatter's (dim, index, src) positionally or by keyword: {dim =, index =, src = | value =}
-- (PyTorch's value= names a number; reduce= is refused by check_reduce)
local function scatter_args(fname, dim, index, src, opts)
  local pos = { dim, index, src }
  local o
  for k = 1, 3 do
    if o == nil and U.is_opts(pos[k]) then o, pos[k] = pos[k], nil end
  end
  if o == nil then o = opts elseif opts ~= nil then fail("%s(): unexpected argument %s", fname, U.typename(opts)) end
  if o == nil then return dim, index, src end
  if o.src ~= nil and o.value ~= nil then fail("%s(): give src or value, not both", fname) end
  local rest = {}
  for k, v in pairs(o) do
    local slot = ({ dim = 1, index = 2, src = 3, value = 3 })[k]
    if slot then
      if pos[slot] ~= nil then fail("%s() got multiple values for argument '%s'", fname, tostring(k)) end
      if k == "value" and torch.is_tensor(v) then
        fail("%s(): argument 'value' must be Number, not Tensor", fname)
      end
      pos[slot] = v
    else
      rest[k] = v
    end
  end
  check_reduce(fname, next(rest) ~= nil and rest or nil)
  return pos[1], pos[2], pos[3]
end

function torch.scatter(x, dim, index, src, opts)
  dim, index, src = scatter_args("scatter", dim, index, src, opts)
  return scatter_impl("scatter", x, dim, index, src, false)
end
function torch.scatter_add(x, dim, index, src)
  return scatter_impl("scatter_add", x, dim, index, src, true)
end
Tensor.scatter, Tensor.scatter_add = torch.scatter, torch.scatter_add
function Tensor:scatter_(dim, index, src, opts)
  dim, index, src = scatter_args("scatter_", dim, index, src, opts)
  return self:copy_(scatter_impl("scatter_", self, dim, index, src, false))
end
function Tensor:scatter_add_(dim, index, src)
  return self:copy_(scatter_impl("scatter_add_", self, dim, index, src, true))
end

-- ---- sorting ----

-- Positional (dim, descending) or a keyword table; returns dim, descending, stable.
local function sort_args(fname, a, b, c, defaults)
  local o = defaults
  if type(a) == "table" then o = a; a = nil end
  if type(b) == "table" then o = b; b = nil end
  if type(c) == "table" then o = c; c = nil end
  local dim = a
  local descending = b
  local stable = false
  if type(o) == "table" then
    for k in pairs(o) do
      if k ~= "dim" and k ~= "descending" and k ~= "stable" then fail("%s() got an unexpected keyword argument '%s'", fname, tostring(k)) end
    end
    if o.dim ~= nil then dim = o.dim end
    if o.descending ~= nil then descending = o.descending end
    stable = o.stable or false
  end
  return dim == nil and -1 or dim, descending and true or false, stable
end

-- torch.sort(x, dim=-1, descending=false, {stable=}) -> values, indices (the sort is always stable)
function torch.sort(x, a, b, c)
  check_tensor("sort", "input", 1, x)
  local dim, descending = sort_args("sort", a, b, c)
  dim = wrap_dim(dim, x:dim())
  local idx = torch._argsort(x, dim, descending)
  return x:gather(dim, idx), idx
end

function torch.argsort(x, a, b, c)
  check_tensor("argsort", "input", 1, x)
  local dim, descending = sort_args("argsort", a, b, c)
  return torch._argsort(x, wrap_dim(dim, x:dim()), descending)
end

function torch.msort(x)
  check_tensor("msort", "input", 1, x)
  return (torch.sort(x, 0))
end

-- Positional args after the leading ones, or a keyword table: fills o from names.
local function named(fname, names, defaults, ...)
  local args, o = { ... }, {}
  for k, v in pairs(defaults) do o[k] = v end
  local n = select("#", ...)
  if n > 0 and type(args[n]) == "table" and getmetatable(args[n]) == nil then
    for k, v in pairs(args[n]) do
      local known = false
      for _, name in ipairs(names) do known = known or name == k end
      if not known then fail("%s() got an unexpected keyword argument '%s'", fname, tostring(k)) end
      o[k] = v
    end
    n = n - 1
  end
  for i = 1, n do if args[i] ~= nil then o[names[i]] = args[i] end end
  return o
end

-- torch.topk(x, k, dim=-1, largest=true, sorted=true) -> values, indices
function torch.topk(x, k, ...)
  check_tensor("topk", "input", 1, x)
  local o = named("topk", { "dim", "largest", "sorted" }, { dim = -1, largest = true, sorted = true }, ...)
  local dim = wrap_dim(o.dim, x:dim())
  if math.type(k) ~= "integer" then fail("topk(): argument 'k' (position 2) must be int, not %s", U.typename(k)) end
  if k < 0 or k > size_at(x, dim) then fail("selected index k out of range") end
  local idx = torch._argsort(x, dim, o.largest and true or false)
  if x:dim() > 0 then idx = idx:narrow(dim, 0, k) elseif k == 0 then idx = idx:reshape(1):narrow(0, 0, 0) end
  return x:gather(dim, idx), idx
end

local function reduce_out(x, dim, idx, keepdim)
  local v = x:gather(dim, idx)
  if not keepdim and x:dim() > 0 then return v:squeeze(dim), idx:squeeze(dim) end
  if x:dim() == 0 then return v:reshape({}), idx:reshape({}) end
  return v, idx
end

-- torch.kthvalue(x, k, dim=-1, keepdim=false) -> values, indices (k counts from 1)
function torch.kthvalue(x, k, ...)
  check_tensor("kthvalue", "input", 1, x)
  local o = named("kthvalue", { "dim", "keepdim" }, { dim = -1, keepdim = false }, ...)
  local dim = wrap_dim(o.dim, x:dim())
  if math.type(k) ~= "integer" then fail("kthvalue(): argument 'k' (position 2) must be int, not %s", U.typename(k)) end
  if k < 1 or k > size_at(x, dim) then fail("kthvalue(): selected number k out of range for dimension %d", dim) end
  local idx = torch._argsort(x, dim, false)
  if x:dim() > 0 then idx = idx:narrow(dim, k - 1, 1) end
  return reduce_out(x, dim, idx, o.keepdim)
end

-- Per slice along dim: the lower median, or the first NaN when the slice has one
-- (PyTorch's median propagates NaN). NaN sorts last, so it sits at n - count(NaN).
local function median_index(x, dim)
  local n = size_at(x, dim)
  local sorted = torch._argsort(x, dim, false)
  if x:dim() == 0 then return sorted end
  local shape = x:size():totable()
  shape[dim + 1] = 1
  local at = torch.full(shape, (n - 1) // 2, { dtype = torch.int64, device = x.device })
  if x:is_floating_point() then
    local nans = x:ne(x):sum(dim, true):to(torch.int64)
    at = torch.where(nans:gt(0), nans:neg():add(n), at)
  end
  return sorted:gather(dim, at)
end

-- torch.median(x): the lower median of all elements (0-dim);
-- torch.median(x, dim, keepdim=false): values, indices
function torch.median(x, ...)
  check_tensor("median", "input", 1, x)
  local o = named("median", { "dim", "keepdim" }, { keepdim = false }, ...)
  if o.dim == nil then
    if x:numel() == 0 then fail("median() input tensor cannot be empty") end
    local flat = x:reshape(-1)
    return flat:gather(0, median_index(flat, 0)):reshape({})
  end
  local dim = wrap_dim(o.dim, x:dim())
  if size_at(x, dim) == 0 then fail("median(): Expected reduction dim %d to have non-zero size.", dim) end
  return reduce_out(x, dim, median_index(x, dim), o.keepdim)
end

for _, name in ipairs { "sort", "argsort", "msort", "topk", "kthvalue", "median" } do Tensor[name] = torch[name] end
