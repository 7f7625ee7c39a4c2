-- Tensor attributes and methods that ported PyTorch scripts reach for: the views x.H / x.mT /
-- x.mH / x:adjoint(), the facts x.is_cpu / is_meta / nbytes / itemsize / layout (torch.strided and
-- the other torch.layout values), the device and format flags that are false here (is_sparse,
-- is_quantized, ...), legacy x:new(...), new_empty_strided, sum_to_size,
-- split_with_sizes and the unsafe_ split forms, nonzero_static, set_ / is_set_to, the
-- deprecated resize / resize_as, in-place aliases (greater_, logical_xor_, baddbmm_ ...),
-- hardshrink, prelu, share_memory_ / is_shared, dim_order, module_load, to_dense.
--
-- Not here: x:storage() / untyped_storage() / storage_type() and set_ from a storage (torch_storage.lua).
local torch = require "torch"
local U = require "nn_util"
require "torch_tensor_more"
local Tensor = torch.Tensor
local fields = getmetatable(torch.empty(0)).__fields

-- ---- torch.layout ----

local layout_mt = { __name = "torch.layout" }
layout_mt.__index = layout_mt
layout_mt.__tostring = function(l) return "torch." .. l.name end
local layout = setmetatable({}, { __tostring = function() return "<class 'torch.layout'>" end })
torch.layout = layout
for _, name in ipairs({ "strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc", "_mkldnn", "jagged" }) do
  if torch[name] == nil then torch[name] = setmetatable({ name = name }, layout_mt) end
end
function layout.is(v) return getmetatable(v) == layout_mt end

-- ---- properties ----

local function matrices(name, x)
  if name == "H" and x:dim() ~= 2 then
    U.errorf("tensor.H is only supported on matrices (2-D tensors). Got %d-D tensor.", x:dim())
  elseif x:dim() < 2 then
    U.errorf("tensor.%s is only supported on matrices or batches of matrices. Got %d-D tensor.", name, x:dim())
  end
end

-- x.T reverses all dims; PyTorch deprecates it on tensors that are not matrices
local plain_T = fields.T
fields.T = function(x)
  local n = x:dim()
  if n ~= 2 and n ~= 0 then
    U.warn("The use of `x.T` on tensors of dimension other than 2 to reverse their shape is deprecated and it will " ..
      "throw an error in a future release. Consider `x.mT` to transpose batches of matrices or " ..
      "`x.permute(*torch.arange(x.ndim - 1, -1, -1))` to reverse the dimensions of a tensor.")
  elseif n == 0 then
    U.warn("Tensor.T is deprecated on 0-D tensors. This function is the identity in these cases.")
  end
  return plain_T(x)
end
fields.mT = function(x)
  matrices("mT", x)
  return x:transpose(-2, -1)
end
local function conj_if_complex(x) return x:is_complex() and x:conj() or x end
fields.mH = function(x)
  matrices("mH", x)
  return conj_if_complex(x:transpose(-2, -1))
end
fields.H = function(x)
  if x:dim() == 0 then return x end
  matrices("H", x)
  return conj_if_complex(x:transpose(0, 1))
end
function Tensor:adjoint() return fields.mH(self) end

fields.is_cpu = function(x) return x.device.type == "cpu" end
fields.is_meta = function(x) return x.device.type == "meta" end
fields.itemsize = function(x) return x:element_size() end
fields.nbytes = function(x) return x:numel() * x:element_size() end
fields.layout = function() return torch.strided end
for _, name in ipairs({ "is_sparse", "is_sparse_csr", "is_quantized", "is_nested", "is_mkldnn", "is_xpu", "is_mps",
  "is_ipu", "is_maia", "is_mtia", "is_xla", "is_vulkan" }) do
  fields[name] = function() return false end
end

function Tensor:is_distributed() return false end
function Tensor:has_names() return false end
function Tensor:sparse_dim() return 0 end
function Tensor:dense_dim() return self:dim() end

-- DataLoader workers are threads of this one process, so every tensor's memory is already
-- shared with them: share_memory_ has nothing to move, and is_shared is true.
function Tensor:share_memory_() return self end
function Tensor:is_shared() return true end

-- the dims from outermost to innermost: by stride, largest first (ties keep dim order)
function Tensor:dim_order()
  local st, dims = self:stride(), {}
  for d = 0, self:dim() - 1 do dims[d + 1] = d end
  table.sort(dims, function(a, b)
    local sa, sb = st[a + 1], st[b + 1]
    if sa ~= sb then return sa > sb end
    return a < b
  end)
  return dims
end

-- how load_state_dict turns `other` into this parameter's or buffer's value
function Tensor:module_load(other, assign)
  if U.is_opts(assign) then assign = U.parse("module_load", { { "assign", false } }, assign).assign end
  return assign and other:detach() or other
end

function Tensor:to_dense(...)
  local o = U.parse("to_dense", { { "dtype" }, { "masked_grad" } }, ...)
  local mt = getmetatable(o.dtype)
  if o.dtype ~= nil and not (mt and mt.__name == "torch.dtype") then
    U.errorf("to_dense(): argument 'dtype' must be torch.dtype, not %s", U.typename(o.dtype))
  end
  if o.dtype ~= nil and o.dtype ~= self.dtype then return self:to(o.dtype) end
  return self
end

-- ---- new tensors like self ----

-- a size given as one argument (an int, a list or a torch.Size) or as several ints, checked as
-- PyTorch's parser does ("sum_to_size(): argument 'size' (position 1) must be tuple of ints, not str")
local function size_args(fname, ...)
  local n = select("#", ...)
  local first = ...
  local ok = n == 1 and (math.type(first) == "integer" or type(first) == "table" and getmetatable(first) == nil
    or type(first) == "userdata" and getmetatable(first).__name == "torch.Size")
  if n ~= 1 then
    ok = n > 0
    for i = 1, n do ok = ok and math.type((select(i, ...))) == "integer" end
  end
  if not ok then
    local bad = n == 1 and first or nil
    for i = 1, n do if math.type((select(i, ...))) ~= "integer" then bad = select(i, ...); break end end
    U.errorf("%s(): argument 'size' (position 1) must be tuple of ints, not %s", fname, U.typename(bad))
  end
  local size = { ... }
  if n == 1 and type(first) == "table" then size = first elseif n == 1 and type(first) == "userdata" then size = first:totable() end
  for i, v in ipairs(size) do
    if math.type(v) ~= "integer" then
      U.errorf("%s(): argument 'size' (position 1) must be tuple of ints, but found element of type %s at pos %d", fname, U.typename(v), i - 1)
    end
  end
  return size
end

local function size_list(v)
  if type(v) == "number" then return { v } end
  if type(v) == "userdata" and getmetatable(v).__name == "torch.Size" then return v:totable() end
  return v
end

-- legacy x:new(): x:new(2, 3) or x:new(torch.Size) an uninitialised tensor of that size, x:new(data) a
-- tensor of x's dtype and device holding data, x:new(t) t itself (aliased), x:new() an empty one
function Tensor:new(...)
  local args = table.pack(...)
  local opts = {}
  if args.n > 0 and U.is_opts(args[args.n]) then
    opts = U.parse("new", { { "device" } }, args[args.n])
    args.n = args.n - 1
  end
  local like = { dtype = self.dtype, device = opts.device or self.device }
  if args.n == 0 then return torch.empty(0, like) end
  local a = args[1]
  if args.n == 1 and torch.is_tensor(a) then
    if a.dtype ~= self.dtype then
      U.errorf("expected %s (got %s)", U.scalar_name(self.dtype), U.scalar_name(a.dtype))
    end
    return a:view_as(a)
  end
  if args.n == 1 and type(a) == "table" then return torch.tensor(a, like) end
  if args.n == 1 and type(a) == "userdata" then return torch.empty(size_list(a), like) end
  for i = 1, args.n do
    if math.type(args[i]) ~= "integer" then
      U.errorf("new(): argument 'size' must be tuple of ints, but found element of type %s at pos %d", U.typename(args[i]), i - 1)
    end
  end
  return torch.empty({ table.unpack(args, 1, args.n) }, like)
end

function Tensor:new_empty_strided(size, stride, opts)
  opts = U.parse("new_empty_strided", { { "dtype" }, { "device" }, { "requires_grad", false } }, opts)
  return torch.empty_strided(size_list(size), size_list(stride),
    { dtype = opts.dtype or self.dtype, device = opts.device or self.device, requires_grad = opts.requires_grad })
end

-- ---- shapes ----

-- sum the dims that broadcast self from `size` back down to it
function Tensor:sum_to_size(...)
  local size = size_args("sum_to_size", ...)
  local n, k = self:dim(), #size
  local ok = k <= n
  for i = 1, math.min(k, n) do
    local want, have = size[k - i + 1], self:size(n - i)
    if want ~= have and want ~= 1 then ok = false end
  end
  if not ok then
    U.errorf("size {%s} is not expandable to size {%s}.", table.concat(size, ", "), table.concat(self:size():totable(), ", "))
  end
  local out = self
  if n > k then
    local lead = {}
    for d = 0, n - k - 1 do lead[#lead + 1] = d end
    out = out:sum(lead)
  end
  local dims = {}
  for i = 1, k do
    if size[i] == 1 and out:size(i - 1) ~= 1 then dims[#dims + 1] = i - 1 end
  end
  if #dims > 0 then out = out:sum(dims, true) end
  return out
end

-- split_with_sizes(sizes, dim=0): the sizes must add up to the dim's length
function Tensor:split_with_sizes(sizes, dim)
  if type(sizes) ~= "table" and type(sizes) ~= "userdata" then
    U.errorf("split_with_sizes(): argument 'split_sizes' must be tuple of ints, but got %s", U.typename(sizes))
  end
  sizes = size_list(sizes)
  dim = U.wrap_dim(dim or 0, self:dim())
  local total = 0
  for _, s in ipairs(sizes) do total = total + s end
  if total ~= self:size(dim) then
    U.errorf("split_with_sizes expects split_sizes to sum exactly to %d (input tensor's size at dimension %d), but got split_sizes=[%s]",
      self:size(dim), dim, table.concat(sizes, ", "))
  end
  return self:split(sizes, dim)
end
-- the unsafe_ forms are the safe ones here (their outputs are views, checked as views)
Tensor.unsafe_split = Tensor.split
Tensor.unsafe_chunk = Tensor.chunk
Tensor.unsafe_split_with_sizes = Tensor.split_with_sizes
torch.split_with_sizes = function(x, ...) return x:split_with_sizes(...) end
torch.unsafe_split = function(x, ...) return x:split(...) end
torch.unsafe_chunk = function(x, ...) return x:chunk(...) end
torch.unsafe_split_with_sizes = function(x, ...) return x:split_with_sizes(...) end
U.check_all(torch, { split_with_sizes = { "input:Tensor", "split_sizes:ints" }, unsafe_split = { "input:Tensor" },
  unsafe_chunk = { "input:Tensor", "chunks:int" }, unsafe_split_with_sizes = { "input:Tensor", "split_sizes:ints" } })

-- nonzero_static(size=, fill_value=-1): nonzero()'s rows, cut or padded with fill_value to `size` rows
function Tensor:nonzero_static(...)
  local o = U.parse("nonzero_static", { { "size", U.REQUIRED }, { "fill_value", -1 } }, ...)
  local size = U.check_int("nonzero_static", "size", o.size)
  if size < 0 then U.errorf("nonzero_static: 'size' must be an non-negative integer, but got %d", size) end
  local nz = self:nonzero()
  local have = nz:size(0)
  if have >= size then return nz:narrow(0, 0, size):contiguous() end
  local pad = torch.full({ size - have, self:dim() }, o.fill_value, { dtype = torch.int64, device = self.device })
  return torch.cat({ nz, pad }, 0)
end
torch.nonzero_static = U.checked("nonzero_static", { "input:Tensor" }, function(x, ...) return x:nonzero_static(...) end)

-- ---- storage sharing ----

-- set_(source) shares source's storage and geometry; set_(source, offset, size, stride) a view of it
-- at that storage offset; set_() an empty tensor
function Tensor:set_(source, offset, size, stride)
  if source == nil then
    self.data = torch.empty(0, { dtype = self.dtype, device = self.device })
    return self
  end
  if not torch.is_tensor(source) then
    U.errorf("set_(): argument 'source' must be Tensor or a storage, not %s", U.typename(source))
  end
  if source.dtype ~= self.dtype then
    U.errorf("Could not set tensor of type %s to a tensor of type %s", U.scalar_name(source.dtype), U.scalar_name(self.dtype))
  end
  if offset ~= nil then
    if size == nil then U.error("set_(): a storage offset needs a size (and a stride)") end
    size = size_list(size)
    if stride == nil then
      stride = {}
      local s = 1
      for i = #size, 1, -1 do stride[i] = s; s = s * size[i] end
    end
    source = source:as_strided(size, size_list(stride), offset)
  end
  self.data = source
  return self
end

function Tensor:is_set_to(other)
  return self:data_ptr() == other:data_ptr() and self.dtype == other.dtype and self.device == other.device
    and self:storage_offset() == other:storage_offset()
    and U.pystr(self:size()) == U.pystr(other:size()) and U.pystr(self:stride()) == U.pystr(other:stride())
end

-- the deprecated out-of-place resize: a reshape that keeps the number of elements
local function resize(self, size, fname)
  U.warn("non-inplace " .. fname .. " is deprecated")
  local n = 1
  for _, s in ipairs(size) do n = n * s end
  if n ~= self:numel() then
    U.errorf("Requested resize to %s (%d elements in total), but the given tensor has a size of %s (%d elements). " ..
      "autograd's resize can only change the shape of a given tensor, while preserving the number of elements. ",
      table.concat(size, "x"), n, table.concat(self:size():totable(), "x"), self:numel())
  end
  return self:reshape(size)
end
function Tensor:resize(...)
  local size = size_args("resize", ...)
  return resize(self, size, "resize")
end
function Tensor:resize_as(other) return resize(self, other:size():totable(), "resize_as") end
U.check_all(Tensor, { is_set_to = { "self", "tensor:Tensor" }, resize_as = { "self", "the_template:Tensor" },
  new_empty_strided = { "self", "size:ints", "stride:ints" } })

-- ---- in-place aliases and small methods ----

Tensor.greater_, Tensor.greater_equal_ = Tensor.gt_, Tensor.ge_
Tensor.less_, Tensor.less_equal_, Tensor.not_equal_ = Tensor.lt_, Tensor.le_, Tensor.ne_
Tensor.arctan2_ = Tensor.atan2_
function Tensor:logical_xor_(other) return self:copy_(self:logical_xor(other)) end
function Tensor:baddbmm_(...) return self:copy_(self:baddbmm(...)) end
function Tensor:conj_physical_()
  if self:is_complex() then self:copy_(self:conj_physical()) end
  return self
end
function Tensor:hardshrink(lambd) return torch.nn.functional.hardshrink(self, lambd) end
function Tensor:prelu(weight) return torch.nn.functional.prelu(self, weight) end

return {}
