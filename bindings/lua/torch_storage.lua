-- Storages: torch.UntypedStorage (bytes), torch.TypedStorage (elements of a dtype) and the legacy
-- torch.FloatStorage, ..., torch.cuda.FloatStorage, ...; x:untyped_storage(), x:storage(),
-- x:set_(storage, ...), torch.FloatTensor(storage). A storage object holds a tensor over all of
-- the memory (torch._storage_view, bindings/storage.c): it keeps the memory alive, and what is
-- written through it the tensors over that memory see.
local torch = require "torch"
local U = require "nn_util"
require "torch_legacy_types"
require "torch_tensor_gaps" -- Tensor.set_, wrapped below
local Tensor = torch.Tensor

local Untyped, Typed = {}, {}
local view_of = torch._storage_view

local function is_untyped(v) return getmetatable(v) == Untyped end
local function is_typed(v) return getmetatable(v) == Typed end
local function is_storage(v) return is_untyped(v) or is_typed(v) end
torch.is_storage = is_storage

local function new_untyped(t) return setmetatable({ _t = t }, Untyped) end
local function new_typed(u, dtype) return setmetatable({ _u = u, _dtype = dtype }, Typed) end
local function untyped(s) return is_untyped(s) and s or s._u end
-- a storage of s's kind (and dtype) over the untyped u
local function like(s, u) return is_untyped(s) and u or new_typed(u, s._dtype) end

-- 1-D tensors over all of the storage: its elements, its bytes
local function elements(s)
  if is_untyped(s) then return view_of(s._t) end
  return view_of(s._u._t, s._dtype)
end
local function bytes(s) return view_of(untyped(s)._t) end

local function deprecated()
  U.warn("TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the only storage " ..
    "class. This should only matter to you if you are using storages directly.  To access UntypedStorage directly, " ..
    "use tensor.untyped_storage() instead of tensor.storage()")
end

-- "torch.FloatStorage" / "torch.cuda.FloatStorage": the legacy class of a dtype and device
local function legacy_name(dtype, cuda)
  return (cuda and "torch.cuda." or "torch.") .. U.scalar_name(dtype) .. "Storage"
end

local M = {} -- the methods of both kinds

function M:size() return elements(self):numel() end
function M:nbytes() return bytes(self):numel() end
function M:element_size() return is_untyped(self) and 1 or elements(self):element_size() end
function M:data_ptr() return bytes(self):data_ptr() end
function M:tolist() return elements(self):tolist() end
function M:untyped() return untyped(self) end
function M:is_shared() return bytes(self):is_shared() end
function M:share_memory_() bytes(self):share_memory_(); return self end
function M:is_pinned() return bytes(self):is_pinned() end
function M:pin_memory() return like(self, new_untyped(bytes(self):pin_memory())) end

function M:fill_(value)
  local _ <close> = torch.no_grad()
  elements(self):fill_(value)
  return self
end

-- a copy of src's contents: element by element (converting) between typed storages, else byte by byte
function M:copy_(src, non_blocking)
  if not is_storage(src) then U.errorf("copy_(): argument 'src' must be a storage, not %s", U.typename(src)) end
  local both_typed = is_typed(self) and is_typed(src)
  local dst, from = both_typed and elements(self) or bytes(self), both_typed and elements(src) or bytes(src)
  if dst:numel() ~= from:numel() then
    U.errorf("copy_(): the source storage has %d %s but this one has %d", from:numel(), both_typed and "elements" or "bytes",
      dst:numel())
  end
  local _ <close> = torch.no_grad()
  dst:copy_(from, non_blocking)
  return self
end

function M:clone() return like(self, new_untyped(bytes(self):clone())) end

function M:to(...)
  local o = U.parse("to", { { "device", U.REQUIRED }, { "non_blocking", false } }, ...)
  local b = bytes(self)
  local moved = b:to(o.device, { non_blocking = o.non_blocking })
  if moved:data_ptr() == b:data_ptr() and moved.device == b.device then return self end
  return like(self, new_untyped(view_of(moved)))
end
function M:cpu() return self:to("cpu") end
function M:cuda(device, non_blocking)
  if device == nil then device = "cuda" elseif math.type(device) == "integer" then device = torch.device("cuda", device) end
  return self:to(device, non_blocking)
end

-- the new size in elements (bytes for an untyped storage); the memory is reallocated in place
function M:resize_(size)
  size = U.check_int("resize_", "size", size)
  torch._storage_resize_(untyped(self)._t, size * self:element_size())
  return self
end

function M:type(dtype)
  if dtype ~= nil then U.error("storage:type(dtype): convert with the storage's float(), double(), ... methods") end
  if is_untyped(self) then return "torch.storage.UntypedStorage" end
  return legacy_name(self._dtype, bytes(self).is_cuda)
end

-- float(), double(), ...: a typed storage of that dtype (self when it already is one)
for name, key in pairs({ double = "float64", float = "float32", half = "float16", bfloat16 = "bfloat16", long = "int64",
  int = "int32", short = "int16", char = "int8", byte = "uint8", bool = "bool", cfloat = "complex64",
  cdouble = "complex128" }) do
  M[name] = function(self)
    local dtype = torch[key]
    if is_typed(self) and self._dtype == dtype then return self end
    local converted = elements(self):to(dtype):clone()
    return new_typed(new_untyped(view_of(converted)), dtype)
  end
end

local function check_index(s, i)
  local n = s:size()
  if math.type(i) ~= "integer" then U.errorf("storage index must be an integer, got %s", U.typename(i)) end
  if i < -n or i >= n then U.errorf("index %d out of range for storage of size %d", i, n) end
  return i < 0 and i + n or i
end

local function index(s, key)
  if type(key) == "number" then return elements(s)[check_index(s, key)]:item() end
  if key == "device" then return bytes(s).device end
  if key == "is_cuda" then return bytes(s).is_cuda end
  if is_typed(s) then
    if key == "dtype" then return s._dtype end
    if key == "_untyped_storage" then return s._u end
  end
  return M[key]
end

local function newindex(s, key, value)
  if type(key) ~= "number" then U.errorf("cannot set attribute '%s' of a storage", tostring(key)) end
  local _ <close> = torch.no_grad()
  elements(s)[check_index(s, key)] = value
end

-- PyTorch's str(): one element a line, then the class, dtype, device and size
local function tostr(s)
  local lines = {}
  for i, v in ipairs(s:tolist()) do lines[i] = U.pystr(v) end
  local info = is_untyped(s) and string.format("[torch.storage.UntypedStorage(device=%s) of size %d]", tostring(s.device), s:size())
    or string.format("[torch.storage.TypedStorage(dtype=%s, device=%s) of size %d]", tostring(s._dtype), tostring(s.device),
      s:size())
  return " " .. table.concat(lines, "\n ") .. "\n" .. info
end

for _, mt in ipairs({ Untyped, Typed }) do
  mt.__index, mt.__newindex, mt.__tostring = index, newindex, tostr
  mt.__len = function(s) return s:size() end
end
Untyped.__name, Typed.__name = "torch.storage.UntypedStorage", "torch.storage.TypedStorage"

-- ---- constructors ----

-- the tensor a new storage is made from: n elements (uninitialised) or a list's
local function source_tensor(fname, first, dtype, device)
  if first == nil then first = 0 end
  local opts = { dtype = dtype, device = device }
  if math.type(first) == "integer" then
    if first < 0 then U.errorf("%s: the size must be non-negative, got %d", fname, first) end
    return torch.empty(first, opts)
  end
  if type(first) == "table" and getmetatable(first) == nil then return torch.tensor(first, opts) end
  U.errorf("%s(): expected a size or a list of values, got %s", fname, U.typename(first))
end

local function class(name, call)
  return setmetatable({ __name = name }, { __call = call, __tostring = function() return "<class '" .. name .. "'>" end })
end

-- torch.UntypedStorage(), (n), (list of bytes); keyword device
torch.UntypedStorage = class("torch.storage.UntypedStorage", function(_, ...)
  local o = U.parse("UntypedStorage", { { "size" }, { "device" } }, ...)
  return new_untyped(view_of(source_tensor("UntypedStorage", o.size, torch.uint8, o.device)))
end)

-- torch.TypedStorage(n or list, {dtype=, device=}) or TypedStorage{wrap_storage=, dtype=}
torch.TypedStorage = class("torch.storage.TypedStorage", function(_, ...)
  deprecated()
  local o = U.parse("TypedStorage", { { "size" }, { "dtype" }, { "device" }, { "wrap_storage" } }, ...)
  local dtype = o.dtype or torch.get_default_dtype()
  if o.wrap_storage ~= nil then
    if not is_untyped(o.wrap_storage) then
      U.errorf("TypedStorage(): argument 'wrap_storage' must be UntypedStorage, but got %s", U.typename(o.wrap_storage))
    end
    if o.size ~= nil or o.device ~= nil then U.error("TypedStorage(): No positional arguments or device are allowed with wrap_storage") end
    if o.dtype == nil then U.error("TypedStorage(): argument 'dtype' must be specified with wrap_storage") end
    return new_typed(o.wrap_storage, dtype)
  end
  return new_typed(new_untyped(view_of(source_tensor("TypedStorage", o.size, dtype, o.device))), dtype)
end)

-- torch.FloatStorage(n or list), torch.cuda.FloatStorage(...), ...: TypedStorages of that dtype and device
for _, key in ipairs({ "float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool",
  "complex64", "complex128" }) do
  local dtype = torch[key]
  for _, cuda in ipairs({ false, true }) do
    local name = legacy_name(dtype, cuda)
    local cls = class(name, function(_, first)
      deprecated()
      local device = cuda and "cuda" or "cpu"
      return new_typed(new_untyped(view_of(source_tensor(name, first, dtype, device))), dtype)
    end)
    cls.dtype, cls.is_cuda = dtype, cuda
    if cuda then torch.cuda[name:match("[^.]*$")] = cls else torch[name:match("[^.]*$")] = cls end
  end
end

-- ---- tensors over storages ----

function Tensor:untyped_storage() return new_untyped(view_of(self)) end
function Tensor:_typed_storage() return new_typed(self:untyped_storage(), self.dtype) end
function Tensor:storage()
  deprecated()
  return self:_typed_storage()
end
-- the legacy storage class of the tensor's dtype and device: torch.FloatStorage, torch.cuda.FloatStorage, ...
function Tensor:storage_type()
  local name = legacy_name(self.dtype, self.is_cuda)
  return self.is_cuda and torch.cuda[name:match("[^.]*$")] or torch[name:match("[^.]*$")]
end

-- PyTorch's set_ names the tensor's dtype by its C++ type (c10's TypeMeta), as GCC spells it
local cxx_names = { float32 = "float", float64 = "double", float16 = "c10::Half", bfloat16 = "c10::BFloat16",
  int64 = "long int", int32 = "int", int16 = "short int", int8 = "signed char", uint8 = "unsigned char", bool = "bool",
  complex64 = "c10::complex<float>", complex128 = "c10::complex<double>" }

-- set_(storage [, storage_offset, size, stride]): self over that memory (1-D over all of it
-- without a size); a typed storage must have self's dtype
local set_ = Tensor.set_
function Tensor:set_(source, offset, size, stride)
  if not is_storage(source) then return set_(self, source, offset, size, stride) end
  if is_typed(source) and source._dtype ~= self.dtype then
    U.errorf("Expected a Storage of type %s or an UntypedStorage, but got type %s for argument 1 'storage'",
      cxx_names[tostring(self.dtype):sub(7)], U.scalar_name(source._dtype))
  end
  local all = view_of(untyped(source)._t, self.dtype)
  if offset == nil and size == nil then return set_(self, all) end
  return set_(self, all, offset or 0, size, stride)
end

-- torch.FloatTensor(storage): a 1-D tensor over the storage's memory
local legacy_mt = getmetatable(torch.FloatTensor)
local legacy_call = legacy_mt.__call
legacy_mt.__call = function(T, first, ...)
  if not is_storage(first) or (T.is_cuda and not torch.cuda.is_available()) then
    return legacy_call(T, first, ...) -- (a CUDA type without a GPU: its "not available" error)
  end
  local s = is_typed(first) and first or new_typed(first, T.dtype)
  if s._dtype ~= T.dtype then
    U.errorf("Expected a Storage of type %s or an UntypedStorage, but got type %s for argument 1 'storage'",
      U.scalar_name(T.dtype), U.scalar_name(s._dtype))
  end
  if bytes(s).is_cuda ~= T.is_cuda then
    U.errorf("%s(): expected a storage on %s, got one on %s", T.__name, T.is_cuda and "cuda" or "cpu", bytes(s).device.type)
  end
  return elements(s)
end

local typename = torch.typename
function torch.typename(v)
  if is_storage(v) then return getmetatable(v).__name end
  return typename(v)
end

return torch
