-- Sparse COO tensors (layout torch.sparse_coo), built from dense tensor ops so they run on any
-- device: torch.sparse_coo_tensor, x:to_sparse() / to_sparse_coo(), and a sparse tensor's
-- indices (int64 [sparse_dim, nnz]), values ([nnz, dense dims...]), coalesce, to_dense,
-- arithmetic (s + s, s * scalar, -s), sums, transpose, conversions and printing;
-- torch.sparse.mm / addmm / sum / softmax / log_softmax, torch.spmm, and torch.mm / matmul /
-- addmm / add, x:mm / x:matmul and x + s, x - s with a sparse argument (dense @ sparse is dense). Gradients flow to the values and to the dense operands through
-- index_select / index_add.
--
-- A sparse tensor is a Lua object, not a Tensor userdata: torch.is_tensor(s) is false, and a
-- dense-only function given one fails with "got sparse COO tensor (...)" (its metatable's __name).
local torch = require "torch"
local U = require "nn_util"
require "torch_tensor_gaps"
local Tensor = torch.Tensor

local Sparse = { __name = "sparse COO tensor (call :to_dense() first)" }
local methods, props = {}, {}
Sparse.__index = function(s, k)
  local m = methods[k]
  if m ~= nil then return m end
  local p = props[k]
  if p then return p(s) end
  return nil
end

local function is_sparse(v) return getmetatable(v) == Sparse end
torch._is_sparse_coo = is_sparse

local function fail(fmt, ...) return U.errorf(fmt, ...) end
local function int64(device) return { dtype = torch.int64, device = device } end
local function shape_list(t) return t.shape:totable() end
local function dtype_name(dt) return (tostring(dt):gsub("^torch%.", "")) end
local function fmt_list(l) return "[" .. table.concat(l, ", ") .. "]" end

local install_wrappers -- below: torch.mm / matmul / addmm / add learn sparse arguments

-- the object over indices / values (already checked); coalesced: the flag
local function make(indices, values, size, coalesced)
  if install_wrappers then install_wrappers() end
  local sd = indices:size(0)
  return setmetatable({ _i = indices, _v = values, _sz = size, _sd = sd, _dd = #size - sd,
    _c = coalesced or values:size(0) < 2 }, Sparse)
end
local function with_values(s, values, coalesced)
  if coalesced == nil then coalesced = s._c end
  return make(s._i, values, s._sz, coalesced)
end

local function size_arg(fname, v)
  if v == nil then return nil end
  if type(v) == "number" then v = { v } end
  if type(v) == "userdata" and getmetatable(v).__name == "torch.Size" then v = v:totable() end
  if type(v) ~= "table" then fail("%s: size must be a list of ints or a torch.Size, got %s", fname, U.typename(v)) end
  local out = {}
  for i, n in ipairs(v) do out[i] = U.check_int(fname, "size", n, 0) end
  return out
end

-- row-major strides of the sparse dims, as an int64 column [sd, 1] on device
local function sparse_strides(size, sd, device)
  local st, acc = {}, 1
  for d = sd, 1, -1 do st[d] = acc; acc = acc * size[d] end
  return torch.tensor(st, int64(device)):unsqueeze(1), acc
end

-- the row-major position of each entry among the sparse dims: int64 [nnz]
local function linear_index(s)
  local st = sparse_strides(s._sz, s._sd, s._i.device)
  return (s._i * st):sum(0)
end

-- int64 [sd, n] indices of linear positions lin
local function unravel(lin, size, sd)
  local st = sparse_strides(size, sd, lin.device)
  local dims = {}
  for d = 1, sd do dims[d] = size[d] end
  return (lin:unsqueeze(0) // st) % torch.tensor(dims, int64(lin.device)):unsqueeze(1)
end

-- ---- construction ----

-- sparse_coo_tensor(indices, values, size?, {dtype=, device=, requires_grad=, is_coalesced=, check_invariants=})
local function sparse_coo_tensor(...)
  local n = select("#", ...)
  local args = table.pack(...)
  -- the size may be left out with the keyword table third
  if n == 3 and U.is_opts(args[3]) then args = { args[1], args[2], nil, args[3], n = 4 } end
  local o = U.parse("sparse_coo_tensor", { { "indices", U.REQUIRED }, { "values", U.REQUIRED }, { "size" }, { "dtype" },
    { "device" }, { "requires_grad", false }, { "is_coalesced" }, { "check_invariants" }, { "pin_memory", false } },
    table.unpack(args, 1, args.n))
  local values = o.values
  if torch.is_tensor(values) then
    if o.dtype then values = values:to(o.dtype) end
  else
    values = torch.tensor(values, { dtype = o.dtype })
  end
  if o.device then values = values:to(o.device) end
  local indices = o.indices
  if torch.is_tensor(indices) then indices = indices:to(values.device, torch.int64)
  else indices = torch.tensor(indices, int64(values.device)) end
  if indices:dim() ~= 2 then
    fail("indices must be sparse_dim x nnz, but got: %s", fmt_list(shape_list(indices)))
  end
  if values:dim() == 0 then fail("values must have at least one dim (nnz), got a 0-dim tensor") end
  local sd, nnz = indices:size(0), indices:size(1)
  if values:size(0) ~= nnz then
    fail("indices and values must have same nnz, but got nnz from indices: %d, nnz from values: %d", nnz, values:size(0))
  end
  if sd == 0 then fail("sparse_coo_tensor: indices must have at least one sparse dim (a [0, nnz] indices tensor is not supported)") end
  local lo, hi = {}, {}
  if nnz > 0 then lo, hi = indices:amin(1):tolist(), indices:amax(1):tolist() end
  for d = 1, sd do
    if nnz > 0 and lo[d] < 0 then fail("found negative index %d for dim %d", lo[d], d - 1) end
  end
  local vshape = shape_list(values)
  local size = size_arg("sparse_coo_tensor", o.size)
  if size then
    local dd = values:dim() - 1
    if #size ~= sd + dd then
      fail("number of dimensions must be sparse_dim (%d) + dense_dim (%d), but got %d", sd, dd, #size)
    end
    for d = 1, sd do
      if nnz > 0 and hi[d] >= size[d] then
        fail("size is inconsistent with indices: for dim %d, size is %d but found index %d", d - 1, size[d], hi[d])
      end
    end
    for d = 2, #vshape do
      if vshape[d] ~= size[sd + d - 1] then
        local want = { nnz }
        for k = sd + 1, #size do want[#want + 1] = size[k] end
        fail("values has incorrect size, expected %s, got %s", fmt_list(want), fmt_list(vshape))
      end
    end
  else
    size = {}
    for d = 1, sd do size[d] = nnz > 0 and hi[d] + 1 or 0 end
    for d = 2, #vshape do size[#size + 1] = vshape[d] end
  end
  local s = make(indices, values, size, o.is_coalesced)
  if o.requires_grad then s._v, s._leaf = values:detach():requires_grad_(true), true end
  return s
end

-- x:to_sparse(sparse_dim?) / x:to_sparse{layout=, dense_dim=}: the entries (rows over the first
-- sparse_dim dims) with a nonzero element, in row-major order (coalesced)
function Tensor:to_sparse(...)
  local o
  if select("#", ...) > 0 and type((...)) == "number" then
    o = U.parse("to_sparse", { { "sparse_dim" } }, ...)
  else
    o = U.parse("to_sparse", { { "layout" }, { "blocksize" }, { "dense_dim" } }, ...)
    if o.layout ~= nil and o.layout ~= torch.sparse_coo then
      fail("to_sparse: layout %s is not supported (only torch.sparse_coo)", tostring(o.layout))
    end
    if o.blocksize ~= nil then fail("to_sparse: blocksize is for the block layouts, which are not supported") end
  end
  local nd = self:dim()
  local sd = o.sparse_dim or (o.dense_dim and nd - U.check_int("to_sparse", "dense_dim", o.dense_dim, 0)) or nd
  sd = U.check_int("to_sparse", "sparse_dim", sd)
  if sd < 1 or sd > nd then
    fail("sparse_dim argument must be in [1, %d] for a %d-D tensor, but got %d", nd, nd, sd)
  end
  local size = shape_list(self)
  local rows = 1
  for d = 1, sd do rows = rows * size[d] end
  local flat = self:reshape(rows, table.unpack(size, sd + 1))
  local nz = flat:ne(0)
  if nz:dim() > 1 then nz = nz:reshape(rows, -1):any(1) end
  local lin = nz:nonzero():reshape(-1)
  return make(unravel(lin, size, sd), flat:index_select(0, lin), size, true)
end
function Tensor:to_sparse_coo() return self:to_sparse() end

-- ---- facts ----

props.is_sparse = function() return true end
props.is_sparse_csr = function() return false end
props.layout = function() return torch.sparse_coo end
props.shape = function(s) return torch.Size(s._sz) end
props.dtype = function(s) return s._v.dtype end
props.device = function(s) return s._v.device end
props.is_cuda = function(s) return s._v.is_cuda end
props.is_cpu = function(s) return not s._v.is_cuda end
props.ndim = function(s) return #s._sz end
props.requires_grad = function(s) return s._v.requires_grad end
-- a leaf: made with requires_grad=true (or given it by requires_grad_), its values a leaf
props.is_leaf = function(s) return not s._v.requires_grad or s._leaf == true end
props.grad_fn = function(s) return not s.is_leaf and s._v.grad_fn or nil end
-- the gradient of a leaf: sparse, on the leaf's own indices
props.grad = function(s)
  local g = s._leaf and s._v.grad
  return g and with_values(s, g) or nil
end

function methods.size(s, d)
  if d == nil then return torch.Size(s._sz) end
  return s._sz[U.wrap_dim(d, #s._sz) + 1]
end
function methods.dim(s) return #s._sz end
methods.ndimension = methods.dim
function methods.sparse_dim(s) return s._sd end
function methods.dense_dim(s) return s._dd end
function methods._nnz(s) return s._i:size(1) end
function methods.numel(s)
  local n = 1
  for _, v in ipairs(s._sz) do n = n * v end
  return n
end
function methods.is_coalesced(s) return s._c end
function methods.is_floating_point(s) return s._v:is_floating_point() end
function methods.is_complex(s) return s._v:is_complex() end
function methods.element_size(s) return s._v:element_size() end
function methods.type(s)
  local name = s._v:type():match("^torch%.(.*)$")
  if s._v.is_cuda then name = name:gsub("^cuda%.", "") return "torch.cuda.sparse." .. name end
  return "torch.sparse." .. name
end
function methods._indices(s) return s._i end
function methods._values(s) return s._v end
function methods.indices(s)
  if not s._c then U.error("Cannot get indices on an uncoalesced tensor, please call .coalesce() first") end
  return s._i
end
function methods.values(s)
  if not s._c then U.error("Cannot get values on an uncoalesced tensor, please call .coalesce() first") end
  return s._v
end

-- ---- conversions ----

-- duplicates summed, entries sorted in row-major order of their sparse indices
function methods.coalesce(s)
  if s._c then return s end
  local keys, inverse = torch.unique(linear_index(s), { sorted = true, return_inverse = true })
  local vshape = shape_list(s._v)
  vshape[1] = keys:size(0)
  local values = torch.zeros(vshape, { dtype = s._v.dtype, device = s._v.device }):index_add(0, inverse, s._v)
  return make(unravel(keys, s._sz, s._sd), values, s._sz, true)
end

function methods.to_dense(s, ...)
  local o = U.parse("to_dense", { { "dtype" }, { "masked_grad" } }, ...)
  local rows = 1
  for d = 1, s._sd do rows = rows * s._sz[d] end
  local flat = shape_list(s._v)
  flat[1] = rows
  local dense = torch.zeros(flat, { dtype = s._v.dtype, device = s._v.device }):index_add(0, linear_index(s), s._v)
  dense = dense:reshape(s._sz)
  if o.dtype ~= nil and o.dtype ~= dense.dtype then dense = dense:to(o.dtype) end
  return dense
end
function methods.to_sparse(s, ...)
  if select("#", ...) > 0 then
    local sd = ...
    if type(sd) == "number" and sd ~= s._sd then
      fail("to_sparse: converting a sparse tensor to sparse_dim %d is not supported (it has %d): use s:to_dense():to_sparse(%d)", sd, s._sd, sd)
    end
  end
  return s
end
methods.to_sparse_coo = function(s) return s end

-- to(device / dtype / tensor, ...) on the values and indices; the options of Tensor:to
function methods.to(s, ...)
  local values = s._v:to(...)
  if values == s._v then return s end
  return make(s._i:to(values.device), values, s._sz, s._c)
end
function methods.cuda(s, ...) local v = s._v:cuda(...) return make(s._i:to(v.device), v, s._sz, s._c) end
function methods.cpu(s) return s:to("cpu") end
for _, name in ipairs({ "double", "float", "half", "bfloat16", "long", "int", "short", "bool", "byte", "char" }) do
  methods[name] = function(s) return with_values(s, s._v[name](s._v)) end
end
function methods.type_as(s, other) return s:to(other.dtype) end
function methods.clone(s) return make(s._i:clone(), s._v:clone(), s._sz, s._c) end
function methods.detach(s) return with_values(s, s._v:detach()) end
function methods.requires_grad_(s, flag)
  s._v:requires_grad_(flag == nil or flag)
  s._leaf = s._v.requires_grad
  return s
end

-- ---- shape ----

function methods.transpose(s, d0, d1)
  local n = #s._sz
  d0, d1 = U.wrap_dim(d0, n), U.wrap_dim(d1, n)
  if d0 == d1 then return s end
  local size = table.move(s._sz, 1, n, 1, {})
  size[d0 + 1], size[d1 + 1] = size[d1 + 1], size[d0 + 1]
  if d0 < s._sd and d1 < s._sd then
    local order = {}
    for d = 0, s._sd - 1 do order[d + 1] = d end
    order[d0 + 1], order[d1 + 1] = d1, d0
    return make(s._i:index_select(0, torch.tensor(order, int64(s._i.device))), s._v, size, false)
  elseif d0 >= s._sd and d1 >= s._sd then
    return make(s._i, s._v:transpose(d0 - s._sd + 1, d1 - s._sd + 1), size, s._c)
  end
  fail("transpose(): cannot transpose a sparse dimension (%d) with a dense dimension (%d)",
    math.min(d0, d1), math.max(d0, d1))
end
function methods.t(s)
  if #s._sz > 2 then fail("t() expects a tensor with <= 2 dimensions, but self is %dD", #s._sz) end
  if #s._sz < 2 then return s end
  return s:transpose(0, 1)
end
props.T = function(s) return s:t() end

-- ---- arithmetic ----

local function check_scalar(fname, v)
  if type(v) == "number" then return v end
  if torch.is_tensor(v) and v:dim() == 0 then return v end
  fail("%s: a sparse COO tensor can be multiplied or divided only by a scalar (a number or a 0-dim tensor), got %s",
    fname, is_sparse(v) and "a sparse tensor" or U.typename(v))
end
function methods.mul(s, v) return with_values(s, s._v * check_scalar("mul", v)) end
function methods.div(s, v) return with_values(s, s._v / check_scalar("div", v)) end
function methods.neg(s) return with_values(s, -s._v) end

local function same_layout(fname, a, b)
  local sa, sb = a._sz, b._sz
  local same = #sa == #sb and a._sd == b._sd
  for d = 1, #sa do same = same and sa[d] == sb[d] end
  if not same then
    fail("%s: sparse tensors must have the same size and sparse_dim, got %s (sparse_dim %d) and %s (sparse_dim %d)",
      fname, fmt_list(sa), a._sd, fmt_list(sb), b._sd)
  end
  if a.device ~= b.device then
    fail("%s: expected both sparse tensors on the same device, got %s and %s", fname, tostring(a.device), tostring(b.device))
  end
end

-- a + alpha * b: sparse + sparse is sparse (the entries of both; coalesced when both were),
-- sparse + dense and dense + sparse are dense
local function add(fname, a, b, alpha)
  alpha = alpha or 1
  if is_sparse(a) and is_sparse(b) then
    same_layout(fname, a, b)
    local bv = alpha == 1 and b._v or b._v * alpha
    local dtype = torch.promote_types(a.dtype, bv.dtype)
    local r = make(torch.cat({ a._i, b._i }, 1), torch.cat({ a._v:to(dtype), bv:to(dtype) }, 0), a._sz, false)
    if a._c and b._c then return r:coalesce() end
    return r
  end
  if is_sparse(a) and torch.is_tensor(b) then return torch.add(a:to_dense(), b, { alpha = alpha }) end
  if torch.is_tensor(a) and is_sparse(b) then return torch.add(a, b:to_dense(), { alpha = alpha }) end
  fail("%s: a sparse COO tensor can be added only to a sparse or dense tensor, got %s and %s", fname,
    is_sparse(a) and "sparse" or U.typename(a), is_sparse(b) and "sparse" or U.typename(b))
end
function methods.add(s, other, opts)
  local alpha = U.parse("add", { { "alpha", 1 } }, opts).alpha
  return add("add", s, other, alpha)
end
function methods.sub(s, other, opts)
  local alpha = U.parse("sub", { { "alpha", 1 } }, opts).alpha
  return add("sub", s, other, -alpha)
end

Sparse.__add = function(a, b) return add("add", a, b) end
Sparse.__sub = function(a, b) return add("sub", a, b, -1) end
Sparse.__unm = function(s) return s:neg() end
Sparse.__mul = function(a, b)
  if is_sparse(a) then return a:mul(b) end
  return b:mul(a)
end
Sparse.__div = function(a, b)
  if not is_sparse(a) then fail("div: dividing by a sparse COO tensor is not supported") end
  return a:div(b)
end

-- ---- reductions ----

-- sum over dims (all when nil): a dense scalar over all dims, else sparse over the rest
local function sparse_sum(s, dim, opts)
  if dim == nil then return s._v:sum(opts) end
  if type(dim) == "number" then dim = { dim } end
  local n, drop = #s._sz, {}
  for _, d in ipairs(dim) do drop[U.wrap_dim(d, n)] = true end
  local keep_sparse, dense_dims, size = {}, {}, {}
  for d = 0, n - 1 do
    if not drop[d] then size[#size + 1] = s._sz[d + 1] end
    if d < s._sd and not drop[d] then keep_sparse[#keep_sparse + 1] = d end
    if d >= s._sd and drop[d] then dense_dims[#dense_dims + 1] = d - s._sd + 1 end
  end
  local values = #dense_dims > 0 and s._v:sum(dense_dims) or s._v
  if #keep_sparse == 0 then return values:sum(0) end
  local indices = s._i:index_select(0, torch.tensor(keep_sparse, int64(s._i.device)))
  return make(indices, values, size, false):coalesce()
end
function methods.sum(s, dim, ...)
  if U.is_opts(dim) then return sparse_sum(s, dim.dim, { dtype = dim.dtype }) end
  return sparse_sum(s, dim)
end

-- ---- products ----

local function check_dense(fname, name, pos, v)
  if is_sparse(v) then
    fail("%s(): argument '%s' (position %d) must be a dense Tensor, got a sparse COO tensor: only sparse @ dense is supported; use %s:to_dense()",
      fname, name, pos, name)
  end
  return U.check_tensor(fname, name, pos, v)
end

-- s @ d for a 2-D sparse s (no dense dims) and a 2-D dense d: each entry (i, j, v) adds
-- v * d[j] to row i of the result
local function spmm(fname, s, d)
  check_dense(fname, "mat2", 2, d)
  if s:dim() ~= 2 or s._dd ~= 0 then
    fail("%s: expected a 2-D sparse matrix with 2 sparse dims as mat1, got size %s with sparse_dim %d", fname,
      fmt_list(s._sz), s._sd)
  end
  if d:dim() ~= 2 then fail("%s: expected a 2-D dense matrix as mat2, got a %d-D tensor", fname, d:dim()) end
  if s._sz[2] ~= d:size(0) then
    fail("%s: mat1 and mat2 shapes cannot be multiplied (%dx%d and %dx%d)", fname, s._sz[1], s._sz[2], d:size(0), d:size(1))
  end
  if s.dtype ~= d.dtype then
    fail("%s: expected mat1 and mat2 to have the same dtype, but got: %s != %s", fname, dtype_name(s.dtype), dtype_name(d.dtype))
  end
  if s.device ~= d.device then
    fail("%s: expected mat1 and mat2 on the same device, but got %s and %s", fname, tostring(s.device), tostring(d.device))
  end
  local rows, cols = s._i:select(0, 0), s._i:select(0, 1)
  local terms = d:index_select(0, cols) * s._v:unsqueeze(1)
  return torch.zeros(s._sz[1], d:size(1), { dtype = d.dtype, device = d.device }):index_add(0, rows, terms)
end

-- d @ s for a 2-D dense d and a 2-D sparse s (dense, as PyTorch's): (s^T @ d^T)^T; a 1-D d is
-- a row vector
local function dense_spmm(fname, d, s)
  d = U.check_tensor(fname, "input", 1, d)
  if s:dim() ~= 2 or s._dd ~= 0 then
    fail("%s: expected a 2-D sparse matrix with 2 sparse dims as mat2, got size %s with sparse_dim %d", fname,
      fmt_list(s._sz), s._sd)
  end
  local vec = d:dim() == 1
  if vec then d = d:unsqueeze(0) end
  if d:dim() ~= 2 then fail("%s: expected a 1-D or 2-D dense tensor as mat1, got a %d-D tensor", fname, d:dim()) end
  if d:size(1) ~= s._sz[1] then
    fail("%s: mat1 and mat2 shapes cannot be multiplied (%dx%d and %dx%d)", fname, d:size(0), d:size(1), s._sz[1], s._sz[2])
  end
  if s.dtype ~= d.dtype then
    fail("%s: expected mat1 and mat2 to have the same dtype, but got: %s != %s", fname, dtype_name(d.dtype), dtype_name(s.dtype))
  end
  local r = spmm(fname, s:t(), d:t()):t()
  return vec and r:squeeze(0) or r
end

local S = torch.sparse or {}
torch.sparse = S

-- sparse.mm(sparse, dense) is dense; sparse.mm(sparse, sparse) is sparse (coalesced)
function S.mm(mat1, mat2)
  if not is_sparse(mat1) then
    fail("sparse.mm(): argument 'mat1' (position 1) must be a sparse COO tensor, got %s", U.typename(mat1))
  end
  if is_sparse(mat2) then return spmm("sparse.mm", mat1, mat2:to_dense()):to_sparse() end
  return spmm("sparse.mm", mat1, mat2)
end

function S.addmm(...)
  local o = U.parse("addmm", { { "input", U.REQUIRED }, { "mat1", U.REQUIRED }, { "mat2", U.REQUIRED }, { "beta", 1 },
    { "alpha", 1 } }, ...)
  check_dense("addmm", "input", 1, o.input)
  if not is_sparse(o.mat1) then return torch.addmm(o.input, o.mat1, o.mat2, { beta = o.beta, alpha = o.alpha }) end
  local p = spmm("addmm", o.mat1, o.mat2)
  if o.alpha ~= 1 then p = p * o.alpha end
  if o.beta == 0 then return p + torch.zeros_like(o.input) end
  return torch.add(p, o.input, { alpha = o.beta })
end

function S.sum(input, dim, opts)
  if not is_sparse(input) then fail("sparse.sum(): input must be a sparse COO tensor, got %s", U.typename(input)) end
  if U.is_opts(dim) then opts, dim = dim, nil end
  local o = U.parse("sparse.sum", { { "dtype" } }, opts)
  if o.dtype then input = input:to(o.dtype) end
  return sparse_sum(input, dim)
end

-- torch.spmm(sparse, dense) (also dense, dense): the older name of mm
function torch.spmm(a, b)
  if is_sparse(a) then return spmm("spmm", a, b) end
  check_dense("spmm", "mat2", 2, b)
  return U.call(torch.mm, a, b)
end

function methods.mm(s, d) return spmm("mm", s, d) end
function methods.matmul(s, d)
  if torch.is_tensor(d) and d:dim() == 1 then return spmm("matmul", s, d:unsqueeze(1)):squeeze(1) end
  return spmm("matmul", s, d)
end

-- softmax over dim of the specified entries only (the unspecified ones count as -inf), the
-- result sparse on the coalesced input's indices
local function sparse_softmax(fname, s, dim, dtype, log)
  if not is_sparse(s) then fail("%s(): input must be a sparse COO tensor, got %s", fname, U.typename(s)) end
  dim = U.wrap_dim(U.check_int(fname, "dim", dim), #s._sz)
  s = s:coalesce()
  local v = dtype and s._v:to(dtype) or s._v
  if dim >= s._sd then
    local f = log and torch.log_softmax or torch.softmax
    return with_values(s, f(v, dim - s._sd + 1), true)
  end
  -- groups: the entries that agree on every sparse index but dim's
  local masked = s._i:clone()
  masked:select(0, dim):zero_()
  local keys, group = torch.unique(linear_index(make(masked, v, s._sz, false)), { return_inverse = true })
  local gshape = shape_list(v)
  gshape[1] = keys:size(0)
  local idx = group
  for _ = 2, v:dim() do idx = idx:unsqueeze(-1) end
  idx = idx:expand_as(v)
  local gmax = torch.full(gshape, -math.huge, { dtype = v.dtype, device = v.device })
    :scatter_reduce(0, idx, v:detach(), "amax")
  local shifted = v - gmax:index_select(0, group)
  local gsum = torch.zeros(gshape, { dtype = v.dtype, device = v.device }):index_add(0, group, shifted:exp())
  local out = log and shifted - gsum:log():index_select(0, group) or shifted:exp() / gsum:index_select(0, group)
  return with_values(s, out, true)
end
function S.softmax(input, dim, opts)
  local o = U.parse("sparse.softmax", { { "dtype" } }, opts)
  return sparse_softmax("sparse.softmax", input, dim, o.dtype, false)
end
function S.log_softmax(input, dim, opts)
  local o = U.parse("sparse.log_softmax", { { "dtype" } }, opts)
  return sparse_softmax("sparse.log_softmax", input, dim, o.dtype, true)
end

-- ---- torch.mm / matmul / addmm / add with a sparse argument ----
-- Installed when the first sparse tensor is made, so that dense-only programs keep the C
-- functions (a wrapper costs a pcall a call). The dense case calls the C function through a
-- field of its own name, so that its errors keep naming it ('mm'), raised again at the user's line.

local dense = { mm = torch.mm, matmul = torch.matmul, addmm = torch.addmm, add = torch.add }
local function dense_mm(...) return dense.mm(...) end
local function dense_matmul(...) return dense.matmul(...) end
local function dense_addmm(...) return dense.addmm(...) end
local function dense_add(...) return dense.add(...) end

install_wrappers = function()
  install_wrappers = nil
  function torch.mm(a, b, ...)
    if is_sparse(a) then return spmm("mm", a, b) end
    if is_sparse(b) then return dense_spmm("mm", a, b) end
    return U.call(dense_mm, a, b, ...)
  end
  function torch.matmul(a, b, ...)
    if is_sparse(a) then return methods.matmul(a, b) end
    if is_sparse(b) then return dense_spmm("matmul", a, b) end
    return U.call(dense_matmul, a, b, ...)
  end
  -- the dense tensor's methods and operators with a sparse right-hand side
  local tmm, tmatmul = Tensor.mm, Tensor.matmul
  function Tensor.mm(a, b, ...)
    if is_sparse(b) then return dense_spmm("mm", a, b) end
    return U.call(tmm, a, b, ...)
  end
  function Tensor.matmul(a, b, ...)
    if is_sparse(b) then return dense_spmm("matmul", a, b) end
    return U.call(tmatmul, a, b, ...)
  end
  local mt = getmetatable(torch.empty(0))
  local tadd, tsub = mt.__add, mt.__sub
  mt.__add = function(a, b)
    if is_sparse(b) then return add("add", a, b) end
    return U.call(tadd, a, b)
  end
  mt.__sub = function(a, b)
    if is_sparse(b) then return add("sub", a, b, -1) end
    return U.call(tsub, a, b)
  end
  function torch.addmm(input, a, b, ...)
    if is_sparse(a) then return S.addmm(input, a, b, ...) end
    if is_sparse(input) then check_dense("addmm", "input", 1, input) end
    if is_sparse(b) then check_dense("addmm", "mat2", 3, b) end
    return U.call(dense_addmm, input, a, b, ...)
  end
  function torch.add(a, b, ...)
    if is_sparse(a) or is_sparse(b) then
      return add("add", a, b, U.parse("add", { { "alpha", 1 } }, ...).alpha)
    end
    return U.call(dense_add, a, b, ...)
  end
end

-- ---- printing: PyTorch's layout of a sparse tensor ----

-- the bracketed body of t's repr, its continuation lines shifted right by indent
local function body(t, indent)
  local s = tostring(t:detach():cpu())
  local b = s:match("^tensor%((.*%])") or s
  b = b:gsub("\n", "\n" .. string.rep(" ", indent))
  if t:numel() == 0 then b = b .. ", size=" .. U.pystr(shape_list(t)) end
  return b
end

Sparse.__tostring = function(s)
  local indent = #"tensor("
  local text = "tensor(indices=tensor(" .. body(s._i, #"indices=tensor(") .. "),\n" .. string.rep(" ", indent) ..
    "values=tensor(" .. body(s._v, #"values=tensor(") .. ")"
  local suffixes = {}
  if s._v.is_cuda then suffixes[#suffixes + 1] = "device='" .. tostring(s.device) .. "'" end
  suffixes[#suffixes + 1] = "size=" .. U.pystr(s._sz)
  suffixes[#suffixes + 1] = "nnz=" .. s:_nnz()
  local dt = s.dtype
  if dt ~= torch.get_default_dtype() and dt ~= torch.int64 and dt ~= torch.bool then
    suffixes[#suffixes + 1] = "dtype=" .. tostring(dt)
  end
  suffixes[#suffixes + 1] = "layout=torch.sparse_coo"
  if s._v.requires_grad then
    if s.is_leaf then
      suffixes[#suffixes + 1] = "requires_grad=True"
    else
      local fn = s._v.grad_fn and tostring(s._v.grad_fn):match("^<(%S+) ") or "SparseCooTensorWithDimsAndTensorsBackward0"
      suffixes[#suffixes + 1] = "grad_fn=<" .. fn .. ">"
    end
  end
  -- the first suffix on a line of its own, the rest appended while the line stays within 80
  local parts, line = { text }, 0
  for i, suf in ipairs(suffixes) do
    if i == 1 or line + #suf + 2 > 80 then
      parts[#parts + 1] = ",\n" .. string.rep(" ", indent) .. suf
      line = indent + #suf
    else
      parts[#parts + 1] = ", " .. suf
      line = line + #suf + 2
    end
  end
  return table.concat(parts) .. ")"
end

function torch.sparse_coo_tensor(...) return U.call_as("sparse_coo_tensor", sparse_coo_tensor, ...) end -- inner errors under its name

return S
