-- More top-level torch names of PyTorch: torch.adjoint, x:as_strided_ / torch.as_strided_scatter,
-- torch.frombuffer (from a Lua string's bytes), the removed linalg functions that only raise
-- (torch.solve, lstsq, symeig, eig, matrix_rank), torch.segment_reduce, the deprecated
-- torch.range, the build facts (has_lapack, ...) and the deterministic debug mode.
-- torch.set_flush_denormal is C (bindings/denormal.c).
local torch = require "torch"
local U = require "nn_util"
require "torch_tensor_gaps" -- Tensor.adjoint
require "torch_shape_more" -- torch.as_strided, use_deterministic_algorithms
local Tensor = torch.Tensor
local REQ = U.REQUIRED

-- ---- adjoint ----

local mH = Tensor.adjoint
function Tensor:adjoint()
  if self:dim() < 2 then
    U.errorf("tensor.adjoint() is only supported on matrices or batches of matrices. Got %d-D tensor.", self:dim())
  end
  return mH(self)
end
function torch.adjoint(input)
  U.check_tensor("adjoint", "input", 1, input)
  return input:adjoint()
end

-- ---- strided views ----

-- x:as_strided_(size, stride, storage_offset): x itself takes that geometry over its storage
function Tensor:as_strided_(size, stride, ...)
  local o = U.parse("as_strided_", { { "storage_offset" } }, ...)
  if self.requires_grad and torch.is_grad_enabled() then
    U.error("as_strided_: not supported on a tensor that requires grad while autograd records (nnrepl's as_strided " ..
      "of such a tensor is a copy); use torch.as_strided(x, size, stride, offset), or run it under torch.no_grad()")
  end
  local off = o.storage_offset ~= nil and U.check_int("as_strided_", "storage_offset", o.storage_offset) or nil
  return self:_set_view_(U.call(self._as_strided, self, size, stride, off))
end

-- the strides of input:clone(): input's own when its elements fill a block of memory without
-- overlap (in some order of dims), else contiguous ones
local function clone_strides(x)
  local size, st, dims = x:size():totable(), x:stride(), {}
  for d = 1, #size do if size[d] > 1 then dims[#dims + 1] = d end end
  table.sort(dims, function(a, b) return st[a] < st[b] end)
  local expect = 1
  for _, d in ipairs(dims) do
    if st[d] ~= expect then return x:contiguous():stride() end
    expect = expect * size[d]
  end
  return st
end

-- as_strided_scatter(input, src, size, stride, storage_offset): a copy of input (with the
-- strides input:clone() has) whose elements at the as_strided view's places in the copy's
-- storage are src's. Differentiable: composed of scatter and gather over storage positions.
function torch.as_strided_scatter(...)
  local o = U.parse("as_strided_scatter", { { "input", REQ }, { "src", REQ }, { "size", REQ }, { "stride", REQ },
    { "storage_offset" } }, ...)
  local input = U.check_tensor("as_strided_scatter", "input", 1, o.input)
  local src = U.check_tensor("as_strided_scatter", "src", 2, o.src)
  local n = input:numel()
  local off = o.storage_offset ~= nil and U.check_int("as_strided_scatter", "storage_offset", o.storage_offset) or 0
  local positions = torch.arange(n, { device = input.device })
  local places = U.call(positions._as_strided, positions, o.size, o.stride, off)
  if places:size() ~= src:size() then
    U.errorf("as_strided_scatter: expected src to have a size equal to the slice of self. src size = %s, slice size = %s",
      tostring(src:size()), tostring(places:size()))
  end
  local where = positions:_as_strided(input:size(), clone_strides(input), 0):reshape(-1) -- input's elements in the copy
  local storage = torch.zeros(n, { dtype = input.dtype, device = input.device }):scatter(0, where, input:reshape(-1))
  storage = storage:scatter(0, places:reshape(-1), src:to(input.dtype):reshape(-1))
  return storage:gather(0, where):view(input:size())
end

-- ---- frombuffer ----

-- frombuffer(buffer, {dtype=, count=-1, offset=0, requires_grad=false}): a 1-D tensor of the
-- buffer's bytes (a Lua string) read as dtype's elements, little-endian. Lua strings cannot be
-- written, so the tensor holds a copy of the bytes rather than sharing them.
function torch.frombuffer(buffer, ...)
  local o = U.parse("frombuffer", { { "dtype", REQ }, { "count", -1 }, { "offset", 0 }, { "requires_grad", false } }, ...)
  if type(buffer) ~= "string" then
    U.errorf("frombuffer: expected the buffer as a Lua string of bytes, got %s", U.typename(buffer))
  end
  local count = U.check_int("frombuffer", "count", o.count)
  local offset = U.check_int("frombuffer", "offset", o.offset)
  local elsize = torch.empty(0, { dtype = o.dtype }):element_size()
  local len = #buffer
  if len == 0 or count == 0 then
    U.errorf("both buffer length (%d) and count (%d) must not be 0", len, count)
  end
  if offset < 0 or offset >= len then
    U.errorf("offset (%d bytes) must be non-negative and no greater than buffer length (%d bytes) minus 1", offset, len)
  end
  if count < 0 then
    if (len - offset) % elsize ~= 0 then
      U.errorf("buffer length (%d bytes) after offset (%d bytes) must be a multiple of element size (%d)", len - offset,
        offset, elsize)
    end
    count = (len - offset) // elsize
  elseif len - offset < count * elsize then
    U.errorf("requested buffer length (%d * %d bytes) after offset (%d bytes) must not be greater than actual buffer " ..
      "length (%d bytes)", count, elsize, offset, len)
  end
  local bytes = torch._matfile.decode(buffer, offset, 2, count * elsize, "uint8") -- MAT type 2: uint8, copied as is
  local t = torch._storage_view(bytes, o.dtype):narrow(0, 0, count)
  if o.requires_grad then t:requires_grad_() end
  return t
end

-- ---- functions PyTorch removed, which only raise ----

local removed = {
  solve = "torch.linalg.solve(A, B) (note the order: A first; it returns the solution only)",
  lstsq = "torch.linalg.lstsq(A, B) (note the order: A first)",
  symeig = "torch.linalg.eigvalsh(A, {UPLO=...}) for the eigenvalues or torch.linalg.eigh(A, {UPLO=...}) for both " ..
    "(the default triangle is now the lower one, UPLO='L', where symeig read the upper one)",
  eig = "torch.linalg.eig(A) (complex eigenvalues and eigenvectors) or torch.linalg.eigvals(A)",
  matrix_rank = "torch.linalg.matrix_rank(A) (its 'symmetric' argument is now called 'hermitian')",
}
for name, replacement in pairs(removed) do
  local msg = string.format("torch.%s was deprecated in PyTorch 1.9 and has been removed; use %s instead", name, replacement)
  torch[name] = function() U.error(msg) end
  if name ~= "matrix_rank" then Tensor[name] = torch[name] end
end

-- ---- segment_reduce ----

local reduce_init = { sum = 0, mean = 0, prod = 1, max = -math.huge, min = math.huge }
local scatter_op = { prod = "prod", max = "amax", min = "amin" }

-- segment_reduce(data, reduce, {lengths=, offsets=, axis=0, unsafe=false, initial=}): reduce
-- ("sum", "mean", "max", "min", "prod") over consecutive segments of data's dim 0, of the
-- given lengths (or between consecutive offsets). An empty segment gives initial, or the
-- reduction's identity (nan for mean). Differentiable through index_add / scatter_reduce.
function torch.segment_reduce(...)
  local o = U.parse("segment_reduce", { { "data", REQ }, { "reduce", REQ }, { "lengths" }, { "indices" }, { "offsets" },
    { "axis", 0 }, { "unsafe", false }, { "initial" } }, ...)
  local data = U.check_tensor("segment_reduce", "data", 1, o.data)
  local reduce = o.reduce
  if reduce_init[reduce] == nil then U.errorf("reduce argument must be either sum, prod, mean, amax or amin, got %s", tostring(reduce)) end
  if o.indices ~= nil then U.error("segment_reduce(): indices based reduction is not supported yet.") end
  local axis = U.check_int("segment_reduce", "axis", o.axis)
  if axis < 0 then axis = axis + data:dim() end
  if axis ~= 0 then U.errorf("segment_reduce: only axis=0 is supported here, got axis=%d", o.axis) end
  local lengths
  if o.lengths ~= nil then
    lengths = U.check_tensor("segment_reduce", "lengths", 3, o.lengths)
  elseif o.offsets ~= nil then
    local offs = U.check_tensor("segment_reduce", "offsets", 5, o.offsets)
    if offs:dim() ~= 1 or offs:numel() < 1 then U.error("segment_reduce: offsets must be a 1-D tensor of at least one offset") end
    lengths = offs:narrow(0, 1, offs:numel() - 1) - offs:narrow(0, 0, offs:numel() - 1)
  else
    U.error("segment_reduce(): Either lengths or offsets must be defined")
  end
  if lengths:dim() ~= 1 then U.errorf("segment_reduce: only 1-D lengths (axis=0) are supported, got %d-D", lengths:dim()) end
  lengths = lengths:to(torch.int64)
  if not o.unsafe then
    if lengths:lt(0):any():item() then U.error("lengths contains negative value!") end
    if lengths:sum():item() ~= data:size(0) then
      U.error("segment_reduce(): Expected all rows of lengths along axis to sum to data.size(lengths.dim()-1) when !unsafe.")
    end
  end
  local S = lengths:numel()
  local shape = data:size():totable()
  shape[1] = S
  local init = o.initial ~= nil and o.initial or reduce_init[reduce]
  local ids = torch.repeat_interleave(torch.arange(S, { device = data.device }), lengths:to(data.device))
  local base = torch.full(shape, init, { dtype = data.dtype, device = data.device })
  local per = { S } -- lengths and ids broadcast over data's other dims
  for i = 2, #shape do per[i] = 1 end
  if reduce == "sum" or reduce == "mean" then
    local out = base:index_add(0, ids, data)
    if reduce == "sum" then return out end
    local len = lengths:to(data.device):view(per)
    local mean = out / len:clamp(1):to(data.dtype)
    if o.initial ~= nil then return torch.where(len:eq(0), out, mean) end
    return torch.where(len:eq(0), torch.full_like(mean, 0 / 0), mean)
  end
  per[1] = data:size(0)
  local idx = ids:view(per):expand_as(data)
  return base:scatter_reduce(0, idx, data, scatter_op[reduce], { include_self = true })
end

-- ---- range ----

-- range(start, end, step=1, {dtype=, device=, requires_grad=}): start, start + step, ... up to
-- end inclusive, of the default float dtype. Deprecated in PyTorch in favour of arange.
function torch.range(...)
  local o = U.parse("range", { { "start", REQ }, { "end", REQ }, { "step", 1 }, { "dtype" }, { "device" }, { "layout" },
    { "requires_grad", false } }, ...)
  U.warn("torch.range is deprecated and will be removed in a future release because its behavior is inconsistent with " ..
    "Python's range builtin. Instead, use torch.arange, which produces values in [start, end).")
  local start, stop, step = o.start, o["end"], o.step
  for _, k in ipairs({ "start", "end", "step" }) do
    if type(o[k]) ~= "number" then U.errorf("range(): argument '%s' must be Number, not %s", k, U.typename(o[k])) end
  end
  if step == 0 then U.error("step must be nonzero") end
  if (step > 0 and stop < start) or (step < 0 and stop > start) then
    U.error("upper bound and larger bound inconsistent with step sign")
  end
  local n = math.floor((stop - start) / step + 1)
  local dtype = o.dtype or torch.get_default_dtype()
  local t = (torch.arange(n, { dtype = torch.float64, device = o.device }) * step + start):to(dtype)
  if o.requires_grad then t:requires_grad_() end
  return t
end

-- ---- facts about the build ----

-- torch.linalg here is nnrepl's own code (no LAPACK library is linked), but everything PyTorch
-- gates on LAPACK works, so scripts that check has_lapack before linalg take the working path.
torch.has_lapack = true
torch.has_spectral = true -- torch.fft
torch.has_mkl = false
torch.has_openmp = false
function torch.is_vulkan_available() return false end

-- ---- deterministic debug mode: 0 "default", 1 "warn", 2 "error" ----

local debug_modes = { default = 0, warn = 1, error = 2 }

function torch.set_deterministic_debug_mode(debug_mode)
  local mode = debug_mode
  if type(mode) == "string" then
    mode = debug_modes[mode]
    if mode == nil then
      U.errorf("invalid value of debug_mode, expected one of `default`, `warn`, `error`, but got %s", debug_mode)
    end
  elseif math.type(mode) == "integer" then
    if mode < 0 or mode > 2 then U.errorf("invalid value of debug_mode, expected 0, 1, or 2, but got %d", mode) end
  else
    U.errorf("debug_mode must be str or int, but got %s", U.typename(debug_mode))
  end
  if mode == 0 then torch.use_deterministic_algorithms(false)
  else torch.use_deterministic_algorithms(true, { warn_only = mode == 1 }) end
end

function torch.get_deterministic_debug_mode()
  if not torch.are_deterministic_algorithms_enabled() then return 0 end
  return torch.is_deterministic_algorithms_warn_only_enabled() and 1 or 2
end

-- as_strided's size and stride checked as PyTorch's parser does
U.check_all(torch, { as_strided = { "input:Tensor", "size:ints", "stride:ints" } })
U.check_all(Tensor, { as_strided = { "self", "size:ints", "stride:ints" }, as_strided_ = { "self", "size:ints", "stride:ints" } })

return torch
