-- Shape, dtype and utility functions of torch, made of the ops (so autograd and every device
-- come with them): diagflat, row_stack, dsplit, swapaxes / swapdims, unflatten, argwhere,
-- unravel_index, randint_like, as_tensor, asarray, result_type, promote_types, can_cast,
-- is_complex, broadcast_shapes; the top-level forms of torch.linalg's qr, lu (lu_factor),
-- lu_solve, lu_unpack and triangular_solve; as_strided; the in-place shape ops squeeze_,
-- unsqueeze_, t_, transpose_, swapaxes_ / swapdims_, resize_, resize_as_ and is_same_size; and
-- use_deterministic_algorithms with its getters.
-- In C (bindings/tensor_create.c, tensor_views.c, autograd.c): set_default_device /
-- get_default_device (every factory reads it), empty_strided, set_num_threads / get_num_threads
-- (the CPU backend's threads: its pool, which also splits matrix products and convolutions; engine/cpu/parallel.h),
-- is_inference_mode_enabled, and the
-- Tensor methods _as_strided (a bounds-checked view of the storage), _set_view_ and
-- _storage_info this file builds on.
local torch = require "torch"
local U = require "nn_util"
local Tensor = torch.Tensor

local function mT(A) return A:transpose(-2, -1) end

-- A list of non-negative ints from an int, a list or a torch.Size (name: for errors).
local function int_list(fname, name, v)
  if type(v) == "number" then return { U.check_int(fname, name, v) } end
  if getmetatable(v) and getmetatable(v).__name == "torch.Size" then v = v:totable() end
  if type(v) ~= "table" then U.errorf("%s: %s must be an int, a list of ints or a torch.Size, got %s", fname, name, U.typename(v)) end
  local out = {}
  for i = 1, #v do out[i] = U.check_int(fname, name, v[i]) end
  return out
end

local function shape_str(list) return "[" .. table.concat(list, ", ") .. "]" end

-- ---- shapes ----

-- diagflat(input, {offset=0}): the flattened input on the offset-th diagonal of a square matrix
function torch.diagflat(input, ...)
  U.check_tensor("diagflat", "input", 1, input)
  local o = U.parse("diagflat", { { "offset", 0 } }, ...)
  return torch.diag(input:reshape(-1), U.check_int("diagflat", "offset", o.offset))
end

function torch.row_stack(list) return torch.vstack(list) end

-- dsplit(x, n or {indices}): tensor_split along dim 2; an int n must divide that dim
function torch.dsplit(x, sections)
  U.check_tensor("dsplit", "input", 1, x)
  if x:dim() < 3 then
    U.errorf("torch.dsplit requires a tensor with at least 3 dimension, but got a tensor with %d dimensions!", x:dim())
  end
  if type(sections) == "number" then
    local n = U.check_int("dsplit", "sections", sections, 1)
    if x:size(2) % n ~= 0 then
      U.errorf("torch.dsplit attempted to split along dimension 2, but the size of the dimension %d is not divisible by the split_size %d!",
        x:size(2), n)
    end
  end
  return torch.tensor_split(x, sections, 2)
end

torch.swapaxes = U.checked("swapaxes", { "input:Tensor", "axis0:int", "axis1:int" }, function(x, a, b) return x:transpose(a, b) end)
torch.swapdims = U.checked("swapdims", { "input:Tensor", "dim0:int", "dim1:int" }, function(x, a, b) return x:transpose(a, b) end)

-- unflatten(x, dim, sizes): dim split into sizes (one of them may be -1), as a view
function torch.unflatten(x, dim, sizes)
  U.check_tensor("unflatten", "input", 1, x)
  if x:dim() == 0 then U.error("unflatten: cannot unflatten a 0-dim tensor") end
  dim = U.wrap_dim(U.check_int("unflatten", "dim", dim), x:dim())
  local s = int_list("unflatten", "sizes", sizes)
  if #s == 0 then U.error("unflatten: sizes must be non-empty") end
  local len, known, infer = x:size(dim), 1, nil
  for i, v in ipairs(s) do
    if v == -1 then
      if infer then U.errorf("unflatten: only one dimension can be inferred, got sizes %s", shape_str(s)) end
      infer = i
    elseif v < 0 then
      U.errorf("unflatten: invalid size %d in sizes %s", v, shape_str(s))
    else
      known = known * v
    end
  end
  if infer then
    if known == 0 or len % known ~= 0 then
      U.errorf("unflatten: sizes %s cannot be inferred to multiply up to the size of dim %d (%d)", shape_str(s), dim, len)
    end
    s[infer] = len // known
  elseif known ~= len then
    U.errorf("unflatten: Provided sizes %s don't multiply up to the size of dim %d (%d) in the input tensor", shape_str(s), dim, len)
  end
  local shape = {}
  for d = 0, dim - 1 do shape[#shape + 1] = x:size(d) end
  for _, v in ipairs(s) do shape[#shape + 1] = v end
  for d = dim + 1, x:dim() - 1 do shape[#shape + 1] = x:size(d) end
  return x:view(shape)
end

-- argwhere(x): the indices of the nonzero elements, one row each (n, x:dim())
function torch.argwhere(x)
  U.check_tensor("argwhere", "input", 1, x)
  return torch.nonzero(x)
end

-- unravel_index(indices, shape) -> a list of int64 tensors of indices' shape, one per dim of
-- shape: the coordinates of the flat (row-major) indices; negative indices count from the end
function torch.unravel_index(indices, shape)
  if math.type(indices) == "integer" then indices = torch.tensor(indices) end
  if not torch.is_tensor(indices) then
    U.errorf("unravel_index: expected 'indices' to be an integer or an integer tensor, got %s", U.typename(indices))
  end
  if indices:is_floating_point() or indices.dtype == torch.bool then
    U.errorf("unravel_index: expected 'indices' to be integer dtype, but got %s", tostring(indices.dtype))
  end
  local s = int_list("unravel_index", "shape", shape)
  local total = 1
  for _, v in ipairs(s) do
    if v < 0 then U.errorf("unravel_index: 'shape' cannot have negative values, but got %s", shape_str(s)) end
    total = total * v
  end
  local idx = indices:to(torch.int64)
  if idx:numel() > 0 then
    local lo, hi = idx:min():item(), idx:max():item()
    if lo < -total or hi >= total then
      U.errorf("unravel_index: 'indices' must be in range [%d, %d] for shape %s, got values in [%d, %d]", -total, total - 1,
        shape_str(s), lo, hi)
    end
  end
  local out, coef = {}, 1
  for k = #s, 1, -1 do
    out[k] = idx:numel() > 0 and (idx // coef) % s[k] or idx:clone()
    coef = coef * s[k]
  end
  return out
end

-- ---- factories ----

-- randint_like(input, [low=0,] high, {dtype=, device=, requires_grad=}): input's shape, dtype
-- and device unless given
function torch.randint_like(input, ...)
  U.check_tensor("randint_like", "input", 1, input)
  local args = table.pack(...)
  local opts = {}
  if args.n > 0 and U.is_opts(args[args.n]) then opts, args.n = args[args.n], args.n - 1 end
  if args.n ~= 1 and args.n ~= 2 then
    U.errorf("randint_like: expected high, or low and high, after the input, got %d positional arguments", args.n)
  end
  local low = args.n == 2 and U.check_int("randint_like", "low", args[1]) or 0
  local high = U.check_int("randint_like", "high", args[args.n])
  local o = U.parse("randint_like", { { "dtype" }, { "device" }, { "requires_grad", false }, { "memory_format" } }, opts)
  return U.call(torch.randint, low, high, input:size(),
    { dtype = o.dtype or input.dtype, device = o.device or input.device, requires_grad = o.requires_grad })
end

local function same_device(a, b)
  a, b = torch.device(a), torch.device(b)
  return a.type == b.type and (a.type == "cpu" or a.index == nil or b.index == nil or a.index == b.index)
end

-- as_tensor(data, {dtype=, device=}): a tensor of that dtype and device comes back as it is (no
-- copy); another tensor is converted (:to); anything else is torch.tensor(data, ...)
function torch.as_tensor(data, ...)
  local o = U.parse("as_tensor", { { "dtype" }, { "device" } }, ...)
  if not torch.is_tensor(data) then return U.call_as("as_tensor", torch.tensor, data, { dtype = o.dtype, device = o.device }) end
  local dtype, device = o.dtype or data.dtype, o.device or data.device
  if dtype == data.dtype and same_device(device, data.device) then return data end
  return U.call_as("as_tensor", data.to, data, { dtype = dtype, device = device })
end

-- asarray(obj, {dtype=, device=, copy=, requires_grad=false}): as_tensor, where copy=true always
-- copies and copy=false fails where a copy would be needed (a Lua value always needs one)
function torch.asarray(obj, ...)
  local o = U.parse("asarray", { { "dtype" }, { "device" }, { "copy" }, { "requires_grad", false } }, ...)
  local r
  if torch.is_tensor(obj) then
    local dtype, device = o.dtype or obj.dtype, o.device or obj.device
    local same = dtype == obj.dtype and same_device(device, obj.device)
    if o.copy == false and not same then
      U.errorf("asarray: can't alias a %s tensor on %s as %s on %s (copy=false)", tostring(obj.dtype), tostring(obj.device),
        tostring(dtype), tostring(torch.device(device)))
    end
    if same and not o.copy then r = obj
    else r = U.call_as("asarray", obj.to, obj, { dtype = dtype, device = device, copy = true }) end
  else
    if o.copy == false then U.errorf("asarray: can't alias a Lua %s (copy=false): only a tensor can be shared", type(obj)) end
    r = U.call_as("asarray", torch.tensor, obj, { dtype = o.dtype, device = o.device })
  end
  if o.requires_grad then r:requires_grad_(true) end
  return r
end

-- ---- dtypes ----

local function check_dtype(fname, name, v)
  if getmetatable(v) == nil or getmetatable(v).__name ~= "torch.dtype" then
    U.errorf("%s: %s must be a torch.dtype, got %s", fname, name, U.typename(v))
  end
  return v
end

-- An operand of the same promotion category (dimensioned tensor, 0-dim tensor, number) with no
-- elements to compute on.
local function probe(fname, name, v)
  if torch.is_tensor(v) then return torch.empty(v:dim() == 0 and {} or { 0 }, { dtype = v.dtype, device = "cpu" }) end
  if type(v) == "number" or type(v) == "boolean" then return v end
  U.errorf("%s: %s must be a Tensor, a number or a boolean, got %s", fname, name, U.typename(v))
end

-- result_type(a, b): the dtype an arithmetic op on a and b returns (tensors or numbers)
function torch.result_type(a, b)
  local pa, pb = probe("result_type", "tensor1", a), probe("result_type", "tensor2", b)
  if not torch.is_tensor(pa) and not torch.is_tensor(pb) then pa = torch.tensor(pa) end
  return (pa + pb).dtype
end

function torch.promote_types(t1, t2)
  check_dtype("promote_types", "type1", t1)
  check_dtype("promote_types", "type2", t2)
  return (torch.empty(0, { dtype = t1, device = "cpu" }) + torch.empty(0, { dtype = t2, device = "cpu" })).dtype
end

-- can_cast(from, to): whether PyTorch's casting rules allow it (no float to integer, nothing but
-- bool to bool)
function torch.can_cast(from, to)
  check_dtype("can_cast", "from_", from)
  check_dtype("can_cast", "to", to)
  if from.is_floating_point and not to.is_floating_point then return false end
  if to == torch.bool and from ~= torch.bool then return false end
  return true
end

function torch.is_complex(x)
  U.check_tensor("is_complex", "input", 1, x)
  return x.dtype.is_complex
end

-- broadcast_shapes(shape, ...): the torch.Size all the shapes (lists, torch.Size or ints) broadcast to
function torch.broadcast_shapes(...)
  local args = table.pack(...)
  local rev, owner = {}, {} -- rev[k]: the size k-th from the last; owner[k]: the argument (0-based) that set it
  for i = 1, args.n do
    local s = int_list("broadcast_shapes", "shape", args[i])
    for k = 1, #s do
      local v = s[#s - k + 1]
      if v < 0 then U.errorf("broadcast_shapes: Trying to create tensor with negative dimension %d: %s", v, shape_str(s)) end
      local cur = rev[k]
      if cur == nil or cur == 1 then rev[k], owner[k] = v, i - 1
      elseif v ~= 1 and v ~= cur then
        U.errorf("broadcast_shapes: Shape mismatch: objects cannot be broadcast to a single shape. Mismatch is between arg %d and arg %d.",
          owner[k], i - 1)
      end
    end
  end
  local out = {}
  for k = #rev, 1, -1 do out[#out + 1] = rev[k] end
  return torch.Size(out)
end

-- ---- linalg at the top level ----

-- qr(A, {some=true}) -> Q, R: reduced (some) or complete
function torch.qr(A, ...)
  U.check_tensor("qr", "input", 1, A)
  local o = U.parse("qr", { { "some", true } }, ...)
  return torch.linalg.qr(A, { mode = o.some and "reduced" or "complete" })
end

-- lu(A, {pivot=true, get_infos=false}) -> A_LU, pivots[, infos]: linalg.lu_factor, infos the
-- 1-based index of the first zero pivot (0: none) per matrix
function torch.lu(A, ...)
  U.check_tensor("lu", "A", 1, A)
  local o = U.parse("lu", { { "pivot", true }, { "get_infos", false } }, ...)
  local LU, piv = torch.linalg.lu_factor(A, { pivot = o.pivot })
  if not o.get_infos then return LU, piv end
  local d = LU:diagonal(0, -2, -1)
  local k = d:size(-1)
  local pos = torch.arange(1, k + 1, { device = A.device })
  local first = torch.where(d:eq(0), pos, k + 1):amin(-1)
  return LU, piv, torch.where(first:gt(k), 0, first):to(torch.int32)
end

-- The row order LAPACK's pivots (..., k), 1-based swaps applied in order, give to m rows: perm
-- (..., m), row i of P^T A being row perm[i] of A.
local function pivots_to_perm(piv, m, fname)
  if piv:is_floating_point() or piv.dtype == torch.bool then
    U.errorf("%s: LU_pivots is expected to be an integer tensor, got %s", fname, tostring(piv.dtype))
  end
  local k = piv:size(-1)
  piv = piv:to(torch.int64)
  if k > 0 and (piv:min():item() < 1 or piv:max():item() > m) then
    U.errorf("%s: LU_pivots must hold 1-based row numbers in [1, %d], got values in [%d, %d]", fname, m, piv:min():item(), piv:max():item())
  end
  local batch = piv:size():totable()
  batch[#batch] = m
  local perm = torch.arange(m, { device = piv.device }):expand(batch):contiguous()
  for i = 0, k - 1 do
    local p = piv:narrow(-1, i, 1) - 1
    local a, b = perm:narrow(-1, i, 1), perm:gather(-1, p)
    perm = perm:scatter(-1, p, a):scatter(-1, torch.full(p:size(), i, { dtype = torch.int64, device = p.device }), b)
  end
  return perm
end

-- lu_unpack(LU_data, LU_pivots, {unpack_data=true, unpack_pivots=true}) -> P, L, U with A = P L U
-- (an empty tensor for a part not unpacked)
function torch.lu_unpack(LU, piv, ...)
  U.check_tensor("lu_unpack", "LU_data", 1, LU)
  U.check_tensor("lu_unpack", "LU_pivots", 2, piv)
  local o = U.parse("lu_unpack", { { "unpack_data", true }, { "unpack_pivots", true } }, ...)
  if LU:dim() < 2 then U.errorf("lu_unpack: LU_data must have at least 2 dimensions, got %d", LU:dim()) end
  local m, n = LU:size(-2), LU:size(-1)
  local k = math.min(m, n)
  if piv:dim() < 1 or piv:size(-1) ~= k then
    U.errorf("lu_unpack: LU_pivots must end in a dim of min(m, n) = %d elements for LU_data %s, got %s", k, U.shape_str(LU), U.shape_str(piv))
  end
  local none = torch.empty(0, { dtype = LU.dtype, device = LU.device })
  local P, L, Up = none, none, none
  if o.unpack_data then
    L = LU:narrow(-1, 0, k):tril(-1) + torch.eye(m, k, { dtype = LU.dtype, device = LU.device })
    Up = LU:narrow(-2, 0, k):triu()
  end
  if o.unpack_pivots then
    local perm = pivots_to_perm(piv, m, "lu_unpack")
    P = torch.arange(m, { device = LU.device }):unsqueeze(-1):eq(perm:unsqueeze(-2)):to(LU.dtype)
  end
  return P, L, Up
end

-- lu_solve(b, LU_data, LU_pivots): x with A x = b, A = P L U from lu / lu_factor
function torch.lu_solve(b, LU, piv)
  U.check_tensor("lu_solve", "input", 1, b)
  U.check_tensor("lu_solve", "LU_data", 2, LU)
  U.check_tensor("lu_solve", "LU_pivots", 3, piv)
  if b:dim() < 2 then U.errorf("lu_solve: b must have at least 2 dimensions, got %s", U.shape_str(b)) end
  if LU:dim() < 2 or LU:size(-1) ~= LU:size(-2) then U.errorf("lu_solve: LU_data must be a batch of square matrices, got %s", U.shape_str(LU)) end
  if b:size(-2) ~= LU:size(-1) then
    U.errorf("lu_solve: b %s and LU_data %s do not match (b must have %d rows)", U.shape_str(b), U.shape_str(LU), LU:size(-1))
  end
  local P, L, Up = torch.lu_unpack(LU, piv)
  local y = torch.linalg.solve_triangular(L, mT(P):matmul(b), { upper = false, unitriangular = true })
  return torch.linalg.solve_triangular(Up, y, { upper = true })
end

-- triangular_solve(b, A, {upper=true, transpose=false, unitriangular=false}) -> solution,
-- cloned_coefficient: X with A X = b (A^T X = b when transpose). Note the order: b first.
function torch.triangular_solve(b, A, ...)
  U.check_tensor("triangular_solve", "input", 1, b)
  U.check_tensor("triangular_solve", "A", 2, A)
  local o = U.parse("triangular_solve", { { "upper", true }, { "transpose", false }, { "unitriangular", false } }, ...)
  local M, upper = A, o.upper
  if o.transpose then M, upper = mT(A), not upper end
  local x = torch.linalg.solve_triangular(M, b, { upper = upper, unitriangular = o.unitriangular })
  return x, A:clone()
end

-- ---- strided views ----

-- as_strided(x, size, stride, {storage_offset=x's}): a view of x's storage with that geometry
-- (an error when it would read outside the storage). Where autograd records (x requires grad),
-- the result is a copy with PyTorch's gradient (each output element's gradient goes to the input
-- element at the same storage position), not a view.
function torch.as_strided(x, size, stride, ...)
  U.check_tensor("as_strided", "input", 1, x)
  local o = U.parse("as_strided", { { "storage_offset" } }, ...)
  local off = o.storage_offset ~= nil and U.check_int("as_strided", "storage_offset", o.storage_offset) or nil
  local v = U.call(x._as_strided, x, size, stride, off)
  if not (x.requires_grad and torch.is_grad_enabled()) then return v end
  local n = x:_storage_info()
  local storage = x:_as_strided({ n }, { 1 }, 0):detach()
  local positions = torch.arange(n, { device = x.device })
  local pos_in = positions:_as_strided(x:size(), x:stride(), x:storage_offset()):reshape(-1)
  local pos_out = positions:_as_strided(v:size(), v:stride(), v:storage_offset()):reshape(-1)
  local covered = torch.zeros(n, { dtype = torch.int64, device = x.device }):index_add_(0, pos_in, torch.ones_like(pos_in)):gt(0)
  local s = torch.index_add(torch.where(covered, 0, storage), 0, pos_in, x:reshape(-1))
  return s:index_select(0, pos_out):view(v:size())
end

-- ---- in-place shape ops ----

-- self takes the geometry (and autograd history) of f(self, ...), a view of it
local function inplace_view(fname, self, f, ...)
  if self.requires_grad and self.is_leaf and torch.is_grad_enabled() then
    U.errorf("%s: a leaf Variable that requires grad is being used in an in-place operation.", fname)
  end
  return self:_set_view_(U.call(f, self, ...))
end

function Tensor:squeeze_(...) return inplace_view("squeeze_", self, Tensor.squeeze, ...) end
function Tensor:unsqueeze_(dim) return inplace_view("unsqueeze_", self, Tensor.unsqueeze, dim) end
function Tensor:t_() return inplace_view("t_", self, Tensor.t) end
function Tensor:transpose_(d0, d1) return inplace_view("transpose_", self, Tensor.transpose, d0, d1) end
Tensor.swapaxes_, Tensor.swapdims_ = Tensor.transpose_, Tensor.transpose_

-- sizes as numbers, a list or a torch.Size
local function sizes_of(fname, ...)
  if select("#", ...) == 1 and type((...)) ~= "number" then return int_list(fname, "size", (...)) end
  return int_list(fname, "size", { ... })
end

-- resize_(sizes...): self becomes contiguous of that size over its storage from its offset on,
-- keeping the elements there; growing past the storage takes a new one with the old elements in
-- front (the rest uninitialised). Errors for a tensor that requires grad, and for growing a view
-- or a tensor whose storage another tensor shares (PyTorch would grow the shared storage).
function Tensor:resize_(...)
  local size = sizes_of("resize_", ...)
  if self.requires_grad then U.error("resize_: cannot resize variables that require grad") end
  local numel = 1
  for _, v in ipairs(size) do
    if v < 0 then U.errorf("resize_: negative dimension %d in size %s", v, shape_str(size)) end
    numel = numel * v
  end
  local strides, acc = {}, 1
  for i = #size, 1, -1 do strides[i] = acc; acc = acc * math.max(size[i], 1) end
  local off = self:storage_offset()
  local have, is_view, shared = self:_storage_info()
  if numel <= have - off then return self:_set_view_(self:_as_strided(size, strides, off)) end
  if shared and not is_view then -- views that are only garbage by now do not count
    collectgarbage()
    have, is_view, shared = self:_storage_info()
  end
  if is_view or shared then
    U.errorf("resize_: cannot grow a %s from %d to %d elements: its storage is shared (clone() it first)",
      is_view and "view" or "tensor that other tensors view", math.max(have - off, 0), numel)
  end
  local new = torch.empty(numel, { dtype = self.dtype, device = self.device })
  local keep = math.max(have - off, 0)
  if keep > 0 then new:narrow(0, 0, keep):copy_(self:_as_strided({ keep }, { 1 }, off)) end
  self.data = new:view(size)
  return self
end

function Tensor:resize_as_(other)
  U.check_tensor("resize_as_", "the_template", 1, other)
  return self:resize_(other:size())
end

function Tensor:is_same_size(other)
  U.check_tensor("is_same_size", "other", 1, other)
  return self:size() == other:size()
end

-- ---- determinism ----

-- use_deterministic_algorithms(mode, {warn_only=false}): while on, the kernels whose results
-- depend on the order of atomic additions fail (warn_only: print a warning and run). Here that
-- is index_add_ into a CUDA float tensor, which also serves the gradients of index_select,
-- gather and embedding, scatter_add and index_put with accumulate (engine/cuda_flags.h); and
-- cuDNN's convolutions take only deterministic engines (as torch.backends.cudnn.deterministic).
-- Every other kernel is deterministic already.
local B = torch._backends

function torch.use_deterministic_algorithms(mode, ...)
  if type(mode) ~= "boolean" then U.errorf("use_deterministic_algorithms: mode must be a boolean, got %s", U.typename(mode)) end
  local o = U.parse("use_deterministic_algorithms", { { "warn_only", false } }, ...)
  if type(o.warn_only) ~= "boolean" then
    U.errorf("use_deterministic_algorithms: warn_only must be a boolean, got %s", U.typename(o.warn_only))
  end
  B.set("deterministic", mode)
  B.set("deterministic.warn_only", o.warn_only)
end

function torch.are_deterministic_algorithms_enabled() return B.get("deterministic") end
function torch.is_deterministic_algorithms_warn_only_enabled() return B.get("deterministic.warn_only") end

for _, name in ipairs({ "diagflat", "dsplit", "swapaxes", "swapdims", "unflatten", "argwhere", "is_complex", "qr", "lu",
  "lu_solve", "triangular_solve", "as_strided" }) do
  Tensor[name] = torch[name]
end

return torch
