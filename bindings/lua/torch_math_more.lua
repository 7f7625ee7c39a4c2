-- More of torch's math, made of the ops (so autograd and every device come with them):
-- square, hypot, logaddexp, logit, nan_to_num, addcmul, addcdiv,
-- count_nonzero, cross, cdist, meshgrid, unique, bincount, diff, and torch.finfo / iinfo.
local torch = require "torch"
local U = require "nn_util"
local Tensor = torch.Tensor

local function tensor(fname, name, v)
  if torch.is_tensor(v) then return v end
  if type(v) == "number" then return torch.tensor(v) end
  U.errorf("%s: %s must be a Tensor or a number, got %s", fname, name, U.typename(v))
end

-- ---- dtype limits ----

local finfo_of = {
  [torch.float32] = { bits = 32, eps = 2 ^ -23, max = (2 - 2 ^ -23) * 2 ^ 127, tiny = 2 ^ -126, resolution = 1e-6 },
  [torch.float64] = { bits = 64, eps = 2 ^ -52, max = (2 - 2 ^ -52) * 2 ^ 1023, tiny = 2 ^ -1022, resolution = 1e-15 },
  [torch.float16] = { bits = 16, eps = 2 ^ -10, max = 65504.0, tiny = 2 ^ -14, resolution = 0.001 },
  [torch.bfloat16] = { bits = 16, eps = 2 ^ -7, max = (2 - 2 ^ -7) * 2 ^ 127, tiny = 2 ^ -126, resolution = 0.01 },
}

-- torch.finfo(dtype): bits, eps, max, min, tiny (smallest_normal), resolution, dtype
function torch.finfo(dtype)
  dtype = dtype or torch.get_default_dtype()
  local f = finfo_of[dtype]
  if not f then U.errorf("torch.finfo() requires a floating point input type, got %s", tostring(dtype)) end
  return { bits = f.bits, eps = f.eps, max = f.max, min = -f.max, tiny = f.tiny, smallest_normal = f.tiny,
    resolution = f.resolution, dtype = tostring(dtype):gsub("^torch%.", "") }
end

local iinfo_of = {}
for name, v in pairs({ uint8 = { 8, 0, 255 }, int8 = { 8, -128, 127 }, int16 = { 16, -32768, 32767 },
  int32 = { 32, -2147483648, 2147483647 }, int64 = { 64, math.mininteger, math.maxinteger } }) do
  iinfo_of[torch[name]] = v
end

function torch.iinfo(dtype)
  local i = iinfo_of[dtype]
  if not i then U.errorf("torch.iinfo() requires an integer input type, got %s", tostring(dtype)) end
  return { bits = i[1], min = i[2], max = i[3], dtype = tostring(dtype):gsub("^torch%.", "") }
end

-- ---- elementwise ----

function torch.square(x) return x * x end
function Tensor:square_() return self:mul_(self) end


function torch.hypot(a, b) return (a * a + b * b):sqrt() end

function torch.logaddexp(a, b)
  a, b = tensor("logaddexp", "input", a), tensor("logaddexp", "other", b)
  local m = torch.maximum(a, b)
  local same_inf = a:eq(b):logical_and(m:abs():eq(math.huge))
  return torch.where(same_inf, m, m + (-(a - b):abs()):exp():log1p())
end

-- logit(x, eps=nil): log(x / (1 - x)), x clamped to [eps, 1 - eps] first when eps is given
function torch.logit(x, ...)
  local eps = U.parse("logit", { { "eps" } }, ...).eps
  if eps ~= nil then x = x:clamp(eps, 1 - eps) end
  return (x / (1 - x)):log()
end
function Tensor:logit_(...)
  local args = table.pack(...)
  return U.maybe_inplace(self, function(s) return torch.logit(s, table.unpack(args, 1, args.n)) end, true)
end

function torch.nan_to_num(x, ...)
  local o = U.parse("nan_to_num", { { "nan", 0.0 }, { "posinf" }, { "neginf" } }, ...)
  local f = torch.finfo(x.dtype)
  local r = torch.where(x:ne(x), torch.full({}, o.nan, { dtype = x.dtype, device = x.device }), x)
  r = torch.where(r:eq(math.huge), torch.full({}, o.posinf or f.max, { dtype = x.dtype, device = x.device }), r)
  return torch.where(r:eq(-math.huge), torch.full({}, o.neginf or f.min, { dtype = x.dtype, device = x.device }), r)
end

local function value_of(fname, ...)
  return U.parse(fname, { { "value", 1 } }, ...).value
end

function torch.addcmul(input, t1, t2, ...) return input + t1 * t2 * value_of("addcmul", ...) end
function torch.addcdiv(input, t1, t2, ...) return input + t1 / t2 * value_of("addcdiv", ...) end
function Tensor:addcmul_(t1, t2, ...) return self:add_(t1 * t2 * value_of("addcmul_", ...)) end
function Tensor:addcdiv_(t1, t2, ...) return self:add_(t1 / t2 * value_of("addcdiv_", ...)) end

function torch.count_nonzero(x, dim) return x:ne(0):sum(dim) end

-- ---- shapes ----

-- torch.meshgrid(t1, t2, ..., {indexing="ij"|"xy"}) or meshgrid({t1, t2, ...}): one grid per input
function torch.meshgrid(...)
  local args = table.pack(...)
  local opts
  if args.n > 0 and U.is_opts(args[args.n]) then opts = args[args.n]; args.n = args.n - 1 end
  local indexing = U.parse("meshgrid", { { "indexing", "ij" } }, opts or {}).indexing
  if indexing ~= "ij" and indexing ~= "xy" then U.errorf("torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: %s", tostring(indexing)) end
  local ts = args
  if args.n == 1 and type(args[1]) == "table" and not torch.is_tensor(args[1]) then ts = table.pack(table.unpack(args[1])) end
  local n = ts.n or #ts
  for i = 1, n do -- PyTorch's parser for its TensorList
    if not torch.is_tensor(ts[i]) then U.errorf("expected Tensor as element %d in argument 0, but got %s", i - 1, U.typename(ts[i])) end
  end
  local sizes = {}
  for i = 1, n do sizes[i] = ts[i]:numel() end
  local swap = indexing == "xy" and n >= 2
  if swap then sizes[1], sizes[2] = sizes[2], sizes[1] end
  local out = {}
  for i = 1, n do
    local pos = i
    if swap and i <= 2 then pos = 3 - i end
    local shape = {}
    for k = 1, n do shape[k] = k == pos and sizes[k] or 1 end
    out[i] = ts[i]:reshape(shape):expand(sizes)
  end
  return table.unpack(out, 1, n)
end

-- torch.cross(a, b, dim): the vector product along dim (of size 3; default: the first such dim)
function torch.cross(a, b, dim)
  if dim == nil then
    for d = 0, a:dim() - 1 do if a:size(d) == 3 then dim = d; break end end
    if dim == nil then U.error("no dimension of size 3 in input") end
  end
  if a:size(dim) ~= 3 then U.errorf("linalg.cross: inputs dimension %d must have length 3. Got %d and %d", dim, a:size(dim), b:size(dim)) end
  local function c(t, i) return t:narrow(dim, i, 1) end
  return torch.cat({ c(a, 1) * c(b, 2) - c(a, 2) * c(b, 1), c(a, 2) * c(b, 0) - c(a, 0) * c(b, 2),
    c(a, 0) * c(b, 1) - c(a, 1) * c(b, 0) }, dim)
end
torch.linalg = torch.linalg or {}
function torch.linalg.cross(a, b, dim) return torch.cross(a, b, dim or -1) end

-- torch.linalg.vector_norm(x, ord=2, dim=nil, keepdim=false), matrix_norm(A, ord="fro", dim={-2, -1}),
-- norm(x, ord=nil, dim=nil): ord inf / -inf / 0 / any p for vectors; fro, 1, -1, inf, -inf for matrices
function torch.linalg.vector_norm(x, ord, dim, keepdim, opts)
  if U.is_opts(ord) then opts, ord = ord, nil end
  if U.is_opts(dim) then opts, dim = dim, nil end
  if opts then ord, dim, keepdim = opts.ord or ord, opts.dim or dim, opts.keepdim or keepdim end
  ord = ord or 2
  local a = x:abs()
  if dim == nil then a, dim = a:reshape(-1), 0 end
  if ord == math.huge then return a:amax(dim, keepdim) end
  if ord == -math.huge then return a:amin(dim, keepdim) end
  if ord == 0 then return a:ne(0):to(x.dtype):sum(dim, keepdim) end
  return (a ^ ord):sum(dim, keepdim) ^ (1 / ord)
end

function torch.linalg.matrix_norm(A, ord, dim, keepdim)
  ord = ord or "fro"
  dim = dim or { -2, -1 }
  local r, c = dim[1] < 0 and dim[1] + A:dim() or dim[1], dim[2] < 0 and dim[2] + A:dim() or dim[2]
  if ord == "fro" then return (A * A):sum({ r, c }, keepdim):sqrt() end
  local a = A:abs()
  if ord == 1 or ord == -1 then -- max / min column sum
    local s = a:sum(r, true)
    local m = ord == 1 and s:amax(c, true) or s:amin(c, true)
    return keepdim and m or m:squeeze(math.max(r, c)):squeeze(math.min(r, c))
  end
  if ord == math.huge or ord == -math.huge then -- max / min row sum
    local s = a:sum(c, true)
    local m = ord == math.huge and s:amax(r, true) or s:amin(r, true)
    return keepdim and m or m:squeeze(math.max(r, c)):squeeze(math.min(r, c))
  end
  U.errorf("linalg.matrix_norm: ord %s is not supported here (fro, 1, -1, inf, -inf)", tostring(ord))
end

function torch.linalg.norm(x, ord, dim, keepdim)
  if type(ord) == "string" or (type(dim) == "table" and #dim == 2) or (ord ~= nil and dim == nil and x:dim() == 2) then
    return torch.linalg.matrix_norm(x, ord, dim, keepdim)
  end
  if ord == nil and dim == nil then return torch.linalg.vector_norm(x) end
  return torch.linalg.vector_norm(x, ord, dim, keepdim)
end

-- torch.cdist(x1 [.., P, M], x2 [.., R, M], p=2): the p-norm distance of every pair of rows
function torch.cdist(x1, x2, ...)
  local o = U.parse("cdist", { { "p", 2.0 }, { "compute_mode" } }, ...)
  if x1:size(-1) ~= x2:size(-1) then
    U.errorf("X1 and X2 must have the same number of columns. X1: %d X2: %d", x1:size(-1), x2:size(-1))
  end
  local p = o.p
  if p == 2 and (x1:size(-2) > 25 or x2:size(-2) > 25) then -- PyTorch's matrix-product form for larger inputs
    local n1, n2 = (x1 * x1):sum(-1, true), (x2 * x2):sum(-1, true)
    local d = n1 - x1:matmul(x2:transpose(-2, -1)) * 2 + n2:transpose(-2, -1)
    return d:clamp(0):sqrt()
  end
  local diff = (x1:unsqueeze(-2) - x2:unsqueeze(-3)):abs()
  if p == math.huge then return diff:amax(-1) end
  if p == 0 then return diff:ne(0):to(x1.dtype):sum(-1) end
  return (diff ^ p):sum(-1) ^ (1 / p)
end

-- torch.diff(x, n=1, dim=-1, prepend=, append=)
function torch.diff(x, ...)
  local o = U.parse("diff", { { "n", 1 }, { "dim", -1 }, { "prepend" }, { "append" } }, ...)
  local dim = o.dim < 0 and o.dim + x:dim() or o.dim
  if o.prepend ~= nil or o.append ~= nil then
    local parts = {}
    if o.prepend ~= nil then parts[#parts + 1] = o.prepend end
    parts[#parts + 1] = x
    if o.append ~= nil then parts[#parts + 1] = o.append end
    x = torch.cat(parts, dim)
  end
  for _ = 1, o.n do
    local len = x:size(dim)
    local a, b = x:narrow(dim, 1, len - 1), x:narrow(dim, 0, len - 1)
    x = x.dtype == torch.bool and a:ne(b) or a - b
  end
  return x
end

-- ---- counting ----

-- torch.unique(x, {sorted, return_inverse, return_counts, dim=nil}): the distinct values, sorted;
-- with the index of each element's value and each value's count when asked (in that order)
function torch.unique(x, ...)
  local o = U.parse("unique", { { "sorted", true }, { "return_inverse", false }, { "return_counts", false }, { "dim" } }, ...)
  if o.dim ~= nil then U.error("torch.unique: dim is not supported") end
  local flat = x:reshape(-1)
  local n = flat:numel()
  local values, order = flat:sort()
  local first = torch.ones(n, { dtype = torch.bool, device = x.device })
  if n > 1 then first:narrow(0, 1, n - 1):copy_(values:narrow(0, 1, n - 1):ne(values:narrow(0, 0, n - 1))) end
  local uniq = values:masked_select(first)
  local out = { uniq }
  if o.return_inverse then
    local group = first:to(torch.int64):cumsum(0) - 1
    local inverse = torch.empty(n, { dtype = torch.int64, device = x.device })
    inverse:scatter_(0, order, group)
    out[#out + 1] = inverse:reshape(x:size())
  end
  if o.return_counts then
    local starts = torch.arange(n, { device = x.device }):masked_select(first)
    local ends = torch.cat({ starts:narrow(0, 1, starts:numel() - 1), torch.tensor({ n }):to(x.device) })
    out[#out + 1] = ends - starts
  end
  return table.unpack(out)
end

-- torch.bincount(x, weights=nil, minlength=0): how often each non-negative integer occurs
function torch.bincount(x, ...)
  local o = U.parse("bincount", { { "weights" }, { "minlength", 0 } }, ...)
  if x:dim() ~= 1 or x:is_floating_point() then U.error("bincount only supports 1-d non-negative integral inputs.") end
  if x:numel() > 0 and x:min():item() < 0 then U.error("bincount only supports 1-d non-negative integral inputs.") end
  local len = math.max(o.minlength, x:numel() > 0 and x:max():item() + 1 or 0)
  local w = o.weights
  local dtype = w ~= nil and (w:is_floating_point() and w.dtype or torch.float64) or torch.int64
  local counts = torch.zeros(len, { dtype = dtype, device = x.device })
  return counts:index_add_(0, x:to(torch.int64), w ~= nil and w:to(dtype) or torch.ones(x:numel(), { dtype = dtype, device = x.device }))
end

-- PyTorch's argument-type errors, and the inner ops' errors naming the function called
U.check_all(torch, {
  square = { "input:Tensor" }, hypot = { "input:Tensor", "other:Tensor|Number" }, logaddexp = {},
  logit = { "input:Tensor", "eps:Number?" }, nan_to_num = { "input:Tensor", "nan:Number?", "posinf:Number?", "neginf:Number?" },
  addcmul = { "input:Tensor", "tensor1:Tensor", "tensor2:Tensor", "value:Number?" },
  addcdiv = { "input:Tensor", "tensor1:Tensor", "tensor2:Tensor", "value:Number?" },
  count_nonzero = { "input:Tensor" }, cross = { "input:Tensor", "other:Tensor", "dim:int?" },
  cdist = { "x1:Tensor", "x2:Tensor", "p:Number?" }, diff = { "input:Tensor", "n:int?", "dim:int?" },
  unique = { "input:Tensor" }, bincount = { "input:Tensor", "weights:Tensor?", "minlength:int?" },
})
U.check_all(Tensor, {
  square_ = { "self" }, logit_ = { "self", "eps:Number?" },
  addcmul_ = { "self", "tensor1:Tensor", "tensor2:Tensor", "value:Number?" },
  addcdiv_ = { "self", "tensor1:Tensor", "tensor2:Tensor", "value:Number?" },
})

for _, name in ipairs({ "square", "hypot", "logaddexp", "logit", "nan_to_num", "addcmul", "addcdiv",
  "count_nonzero", "cross", "diff", "unique", "bincount" }) do
  Tensor[name] = torch[name]
end

return torch
