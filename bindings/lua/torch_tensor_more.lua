-- More of torch's tensor functions, made of the ops: x:new_zeros / new_ones / new_full /
-- new_empty / new_tensor; broadcast_to, broadcast_tensors, ravel, hstack, vstack, dstack,
-- column_stack, atleast_1d / 2d / 3d, tensor_split, hsplit, vsplit, take, take_along_dim;
-- logical_xor, floor_divide, deg2rad, rad2deg, sgn, positive, heaviside (xlogy and sinc: torch_special.lua),
-- copysign, signbit, ldexp, float_power, isin; searchsorted, bucketize, tril_indices,
-- triu_indices, cartesian_prod; nansum, nanmean, std_mean, var_mean, quantile; index_fill_,
-- fill_diagonal_.
local torch = require "torch"
local U = require "nn_util"
local Tensor = torch.Tensor

-- ---- new tensors like self (its dtype and device unless given) ----

local function like(self, opts)
  opts = opts or {}
  return { dtype = opts.dtype or self.dtype, device = opts.device or self.device, requires_grad = opts.requires_grad }
end

-- size as a list, a torch.Size or numbers; the options table last
local function size_and_opts(...)
  local args = table.pack(...)
  local opts
  if args.n > 0 and U.is_opts(args[args.n]) then opts = args[args.n]; args.n = args.n - 1 end
  if args.n == 1 and type(args[1]) ~= "number" then return args[1], opts end
  return { table.unpack(args, 1, args.n) }, opts
end

function Tensor:new_zeros(...) local s, o = size_and_opts(...); return torch.zeros(s, like(self, o)) end
function Tensor:new_ones(...) local s, o = size_and_opts(...); return torch.ones(s, like(self, o)) end
function Tensor:new_empty(...) local s, o = size_and_opts(...); return torch.empty(s, like(self, o)) end
function Tensor:new_full(size, value, opts) return torch.full(size, value, like(self, opts)) end
function Tensor:new_tensor(data, opts)
  local t = torch.is_tensor(data) and data:detach():clone() or torch.tensor(data)
  return t:to(like(self, opts).device):to((opts and opts.dtype) or self.dtype)
end

-- ---- shapes ----

function torch.broadcast_to(x, shape) return x:expand(shape) end

-- each argument a tensor (or one list of them), with PyTorch's "expected Tensor as element i in
-- argument 0"; none gives none, as PyTorch's empty tuple
local function tensor_list(ts)
  if ts.n == 1 and type(ts[1]) == "table" and not torch.is_tensor(ts[1]) and not (U.is_opts(ts[1]) and next(ts[1]) ~= nil) then
    ts = table.pack(table.unpack(ts[1]))
  end
  for i = 1, ts.n do
    if not torch.is_tensor(ts[i]) then U.errorf("expected Tensor as element %d in argument 0, but got %s", i - 1, U.typename(ts[i])) end
  end
  return ts
end

local function broadcast_tensors(...)
  local ts = tensor_list(table.pack(...))
  if ts.n == 0 then return end
  local acc = ts[1]
  for i = 2, ts.n do acc = acc + ts[i] * 0 end
  local shape = acc:size()
  local out = {}
  for i = 1, ts.n do out[i] = ts[i]:expand(shape) end
  return table.unpack(out, 1, ts.n)
end
function torch.broadcast_tensors(...) return U.call_as("broadcast_tensors", broadcast_tensors, ...) end

function torch.ravel(x) return x:reshape(-1) end

local function atleast(n)
  return function(x)
    while x:dim() < n do x = n == 3 and x:dim() == 2 and x:unsqueeze(-1) or x:unsqueeze(0) end
    return x
  end
end
torch.atleast_1d, torch.atleast_2d, torch.atleast_3d = atleast(1), atleast(2), atleast(3)

local function mapped(list, f)
  local out = {}
  for i, t in ipairs(list) do out[i] = f(t) end
  return out
end

function torch.hstack(list)
  if #list == 0 then U.error("hstack expects a non-empty TensorList") end
  return torch.cat(list, list[1]:dim() == 1 and 0 or 1)
end
function torch.vstack(list) return torch.cat(mapped(list, torch.atleast_2d), 0) end
function torch.dstack(list) return torch.cat(mapped(list, torch.atleast_3d), 2) end
function torch.column_stack(list)
  if #list == 0 then U.error("column_stack expects a non-empty TensorList") end
  return torch.hstack(mapped(list, function(t) return t:dim() <= 1 and t:reshape(-1, 1) or t end))
end

-- tensor_split(x, n or {indices}, dim=0): n parts as even as can be (the first ones one longer), or cut at indices
function torch.tensor_split(x, sections, dim)
  dim = dim or 0
  -- PyTorch's checks (TensorShape.cpp) with its texts
  if x:dim() == 0 then U.errorf("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims") end
  if torch.is_tensor(sections) then
    local what = "tensor_split expected tensor_indices_or_sections to "
    if sections.dtype ~= torch.int64 then U.errorf(what .. "have dtype of long, but got %s", U.scalar_name(sections.dtype)) end
    if sections:dim() > 1 then
      U.errorf(what .. "be a zero-dimensional or one-dimensional tensor, but got a tensor with %d dims", sections:dim())
    end
    if sections:dim() == 0 then sections = sections:item() end
  end
  dim = U.wrap_dim(dim, x:dim())
  local len, cuts = x:size(dim), {}
  if type(sections) == "number" then
    local n = U.check_int("tensor_split", "sections", sections, 1)
    local base, extra, at = len // n, len % n, 0
    for i = 1, n - 1 do at = at + base + (i <= extra and 1 or 0); cuts[#cuts + 1] = at end
  else
    for _, c in ipairs(torch.is_tensor(sections) and sections:tolist() or sections) do cuts[#cuts + 1] = math.min(math.max(c, 0), len) end
  end
  local out, prev = {}, 0
  cuts[#cuts + 1] = len
  for _, c in ipairs(cuts) do
    local from = math.min(prev, len)
    out[#out + 1] = x:narrow(dim, from, math.max(c - from, 0))
    prev = math.max(c, prev)
  end
  return table.unpack(out)
end
function torch.hsplit(x, s)
  if x:dim() < 1 then U.errorf("torch.hsplit requires a tensor with at least 1 dimension, but got a tensor with %d dimensions!", x:dim()) end
  return torch.tensor_split(x, s, x:dim() == 1 and 0 or 1)
end
function torch.vsplit(x, s)
  if x:dim() < 2 then U.errorf("torch.vsplit requires a tensor with at least 2 dimension, but got a tensor with %d dimensions!", x:dim()) end
  return torch.tensor_split(x, s, 0)
end

function torch.take(x, index) return x:reshape(-1):index_select(0, index:reshape(-1)):reshape(index:size()) end

function torch.take_along_dim(x, indices, dim)
  if dim == nil then return x:reshape(-1):gather(0, indices:reshape(-1)) end
  local shape = (x:narrow(dim, 0, 1) + indices:narrow(dim, 0, 1):to(x.dtype) * 0):size()
  local xs, is = {}, {}
  for d = 0, #shape - 1 do
    xs[d + 1] = d == dim and x:size(dim) or shape[d]
    is[d + 1] = d == dim and indices:size(dim) or shape[d]
  end
  return x:expand(xs):gather(dim, indices:expand(is))
end

-- x:unfold(dim, size, step): the windows of `size` along dim every `step`, as a new last dim; a
-- view, as PyTorch's (windows may overlap: as_strided's gradient adds them up)
function Tensor:unfold(dim, size, step)
  if dim < 0 then dim = dim + math.max(self:dim(), 1) end
  local len = self:dim() == 0 and 1 or self:size(dim)
  if size > len then U.errorf("maximum size for tensor at dimension %d is %d but size is %d", dim, len, size) end
  if step <= 0 then U.errorf("step is %d but must be > 0", step) end
  if self:dim() == 0 then return self:as_strided({ size }, { 1 }, self:storage_offset()) end
  local shape, strides = self:size():totable(), self:stride()
  local along = strides[dim + 1]
  shape[dim + 1], strides[dim + 1] = (len - size) // step + 1, along * step
  shape[#shape + 1], strides[#strides + 1] = size, along
  return self:as_strided(shape, strides, self:storage_offset())
end

-- ---- elementwise ----

function torch.logical_xor(a, b) return a:ne(0):ne(torch.is_tensor(b) and b:ne(0) or b ~= 0) end
function torch.floor_divide(a, b)
  local q = (a / b):floor()
  if torch.is_tensor(a) and not a:is_floating_point() and math.type(b) ~= "float" and not (torch.is_tensor(b) and b:is_floating_point()) then
    q = q:to(a.dtype)
  end
  return q
end
function torch.deg2rad(x) return x * (math.pi / 180) end
function torch.rad2deg(x) return x * (180 / math.pi) end
function torch.positive(x) return x end
function torch.heaviside(x, values) return torch.where(x:eq(0), values, x:gt(0):to(x.dtype)) end
function torch.copysign(a, b)
  local neg = torch.is_tensor(b) and torch.signbit(b) or (b < 0 or 1 / b < 0)
  return torch.where(neg, -a:abs(), a:abs())
end
-- the sign bit: true for negative numbers and for -0.0
function torch.signbit(x)
  if not x:is_floating_point() then return x:lt(0) end
  return x:lt(0):logical_or(x:eq(0):logical_and((1 / x):lt(0)))
end
function torch.ldexp(x, e) return x * (2 ^ e) end
function torch.float_power(a, b)
  a = torch.is_tensor(a) and a:to(torch.float64) or a
  b = torch.is_tensor(b) and b:to(torch.float64) or b
  return torch.is_tensor(a) and a ^ b or torch.full({}, a, { dtype = torch.float64 }) ^ b
end
-- isin(elements, test_elements, {invert=false}): whether each element is among the test elements
function torch.isin(elements, test, opts)
  local t = torch.is_tensor(test) and test:reshape(-1) or torch.tensor(type(test) == "table" and test or { test })
  local e = torch.is_tensor(elements) and elements or torch.tensor(elements)
  local hit = e:unsqueeze(-1):eq(t:to(e.device)):any(-1)
  if opts and opts.invert then hit = hit:logical_not() end
  return hit
end

-- ---- sorted search ----

-- searchsorted(sorted [.., M], values [.., K], {right=false, side=}): insertion positions
function torch.searchsorted(sorted, values, opts)
  opts = opts or {}
  local right = opts.right or opts.side == "right"
  local v = torch.is_tensor(values) and values or torch.tensor(values)
  local s = sorted
  if s:dim() == 1 then
    local cmp = right and s:le(v:unsqueeze(-1)) or s:lt(v:unsqueeze(-1))
    return cmp:sum(-1)
  end
  local cmp = right and s:unsqueeze(-2):le(v:unsqueeze(-1)) or s:unsqueeze(-2):lt(v:unsqueeze(-1))
  return cmp:sum(-1)
end
function torch.bucketize(input, boundaries, opts)
  return torch.searchsorted(boundaries, input, { right = opts and opts.right })
end

local function tri_indices(fname, lower)
  return function(row, col, offset, opts)
    if U.is_opts(offset) then opts, offset = offset, nil end
    offset = offset or 0
    local mask = torch.ones(row, col, { dtype = torch.bool })
    mask = lower and mask:tril(offset) or mask:triu(offset)
    local idx = torch.nonzero(mask):t()
    return opts and opts.device and idx:to(opts.device) or idx
  end
end
torch.tril_indices = tri_indices("tril_indices", true)
torch.triu_indices = tri_indices("triu_indices", false)

function torch.cartesian_prod(...)
  local args = tensor_list(table.pack(...))
  if args.n == 0 then U.error("meshgrid expects a non-empty TensorList") end
  for i = 1, args.n do
    if args[i]:dim() ~= 1 then U.errorf("Expect a 1D vector, but got shape %s", U.shape_str(args[i])) end
  end
  args.n = args.n + 1
  args[args.n] = { indexing = "ij" }
  local grids = table.pack(torch.meshgrid(table.unpack(args, 1, args.n)))
  if grids.n == 1 then return grids[1] end
  local cols = {}
  for i = 1, grids.n do cols[i] = grids[i]:reshape(-1) end
  return torch.stack(cols, 1)
end

-- ---- reductions ----

function torch.nansum(x, ...) return torch.where(x:ne(x), torch.zeros_like(x), x):sum(...) end
function torch.nanmean(x, dim, keepdim)
  local ok = x:eq(x)
  local s = torch.where(ok, x, torch.zeros_like(x))
  return s:sum(dim, keepdim) / ok:to(x.dtype):sum(dim, keepdim)
end
-- var_mean / std_mean(x, dim=nil, {correction=1, keepdim=false}): the statistic and the mean
local function with_mean(stat)
  return function(x, dim, opts)
    if U.is_opts(dim) then dim, opts = nil, dim end
    opts = opts or {}
    if dim == nil then return stat(x, opts), x:mean() end
    return stat(x, dim, opts), x:mean(dim, opts.keepdim or false)
  end
end
torch.var_mean, torch.std_mean = with_mean(Tensor.var), with_mean(Tensor.std)

-- quantile(x, q (a number or a 1-d tensor), dim=nil, keepdim=false, {interpolation="linear"})
function torch.quantile(x, q, dim, keepdim, opts)
  if U.is_opts(dim) then opts, dim, keepdim = dim, opts and opts.dim, opts and opts.keepdim end
  if U.is_opts(keepdim) then opts, keepdim = keepdim, nil end
  opts = opts or {}
  local interp = opts.interpolation or "linear"
  local data = dim == nil and x:reshape(-1) or x
  local d = dim == nil and 0 or (dim < 0 and dim + x:dim() or dim)
  local sorted = data:sort(d)
  local n = data:size(d)
  if torch.is_tensor(q) then -- PyTorch's quantile_checks
    if q:dim() > 1 then U.error("quantile() q must be a scalar or 1D tensor") end
    if q.dtype ~= x.dtype then U.error("quantile() q tensor must be same dtype as the input tensor") end
  end
  if not (x:is_floating_point()) then U.error("quantile() input tensor must be either float or double dtype") end
  local qs = torch.is_tensor(q) and (q:dim() == 0 and { q:item() } or q:tolist()) or { q }
  local outs = {}
  for i, qq in ipairs(qs) do
    if qq < 0 or qq > 1 then U.error("quantile() q values must be in the range [0, 1]") end
    local pos = qq * (n - 1)
    local lo, hi = math.floor(pos), math.ceil(pos)
    local frac = pos - lo
    local a, b = sorted:narrow(d, lo, 1), sorted:narrow(d, hi, 1)
    local v
    if interp == "linear" then v = a + (b - a) * frac
    elseif interp == "lower" then v = a
    elseif interp == "higher" then v = b
    elseif interp == "nearest" then v = (frac > 0.5 or (frac == 0.5 and hi % 2 == 0)) and b or a
    elseif interp == "midpoint" then v = (a + b) / 2
    else U.errorf("quantile() interpolation must be one of linear, lower, higher, midpoint or nearest. Got %s", tostring(interp)) end
    if not keepdim or dim == nil then v = v:squeeze(d) end
    if keepdim and dim == nil then
      local shape = {}
      for _ = 1, x:dim() do shape[#shape + 1] = 1 end
      v = v:reshape(shape)
    end
    outs[i] = v
  end
  if torch.is_tensor(q) and q:dim() > 0 then return torch.stack(outs, 0) end
  return outs[1]
end

-- ---- in place ----

function Tensor:index_fill_(dim, index, value)
  local v = torch.is_tensor(value) and value or torch.full({}, value, { dtype = self.dtype, device = self.device })
  local shape = self:size()
  local idx_shape = {}
  for d = 0, #shape - 1 do idx_shape[d + 1] = d == dim and index:numel() or shape[d] end
  local view = {}
  for d = 0, #shape - 1 do view[d + 1] = d == dim and index:numel() or 1 end
  return self:scatter_(dim, index:reshape(view):expand(idx_shape), v:expand(idx_shape):contiguous())
end

function Tensor:fill_diagonal_(value, wrap)
  local n = math.huge
  for d = 0, self:dim() - 1 do n = math.min(n, self:size(d)) end
  if self:dim() == 2 and wrap then n = self:size(0) end
  local _ <close> = torch.no_grad()
  for i = 0, n - 1 do
    local t = self
    if self:dim() == 2 and wrap then
      local c = self:size(1)
      local r = i + (i // c) -- rows past a square block restart one row lower, as PyTorch's wrap
      if r >= self:size(0) then break end
      self[r][i % c] = value
    else
      for _ = 1, self:dim() do t = t[i] end
      t:fill_(value)
    end
  end
  return self
end

-- PyTorch's argument-type errors, and the inner ops' errors naming the function called
local sections = "indices_or_sections"
U.check_all(torch, {
  broadcast_to = { "input:Tensor", "size:ints" }, ravel = { "input:Tensor" },
  atleast_1d = { "input:Tensor" }, atleast_2d = { "input:Tensor" }, atleast_3d = { "input:Tensor" },
  hstack = { "tensors:Tensors" }, vstack = { "tensors:Tensors" }, dstack = { "tensors:Tensors" },
  column_stack = { "tensors:Tensors" },
  tensor_split = { "input:Tensor", sections .. ":Tensor|ints", "dim:int?" },
  hsplit = { "input:Tensor", sections .. ":Tensor|ints" }, vsplit = { "input:Tensor", sections .. ":Tensor|ints" },
  take = { "input:Tensor", "index:Tensor" }, take_along_dim = { "input:Tensor", "indices:Tensor", "dim:int?" },
  logical_xor = { "input:Tensor", "other:Tensor|Number" }, deg2rad = { "input:Tensor" }, rad2deg = { "input:Tensor" },
  positive = { "input:Tensor" }, heaviside = { "input:Tensor", "values:Tensor|Number" },
  copysign = { "input:Tensor", "other:Tensor|Number" }, signbit = { "input:Tensor" },
  ldexp = { "input:Tensor", "other:Tensor|Number" }, float_power = { "input:Tensor|Number", "exponent:Tensor|Number" },
  isin = { "elements:Tensor|Number" }, searchsorted = { "sorted_sequence:Tensor" },
  bucketize = { "input:Tensor|Number", "boundaries:Tensor" },
  nansum = { "input:Tensor" }, nanmean = { "input:Tensor" }, var_mean = { "input:Tensor" }, std_mean = { "input:Tensor" },
  quantile = { "input:Tensor", "q:Tensor|Number", "dim:int?" },
})
U.check_all(Tensor, {
  unfold = { "self", "dimension:int", "size:int", "step:int" }, new_tensor = { "self" },
  index_fill_ = { "self", "dim:int", "index:Tensor", "value:Tensor|Number" }, fill_diagonal_ = { "self", "fill_value:Number" },
})

for _, name in ipairs({ "broadcast_to", "ravel", "tensor_split", "hsplit", "vsplit", "take", "take_along_dim", "logical_xor",
  "floor_divide", "deg2rad", "rad2deg", "positive", "heaviside", "copysign", "signbit", "ldexp",
  "float_power", "isin", "nansum", "nanmean", "quantile" }) do
  Tensor[name] = torch[name]
end

return torch
