-- torch.utils.data: Dataset (subclassed in Lua), TensorDataset, Subset,
-- ConcatDataset, StackDataset, random_split, IterableDataset, ChainDataset, the samplers,
-- default_collate and DataLoader.
--
-- Indices are 0-based as in PyTorch; Lua lists (of indices, of samples, of
-- fields) stay 1-based. A sample is what __getitem returns: one value, or
-- several (`return img, label`), which ds[i] gives as the list {img, label}
-- and ds:get(i) as multiple values.
--
-- DataLoader fetches in one of three ways, with the same batches every way:
--  * device: a TensorDataset batched by the built-in samplers with default_collate
--    is cut whole batches at a time with index_select on its tensors' own device
--    (a GPU-resident data set never leaves the GPU); see device_epoch below.
--  * C: the built-in datasets (TensorDataset, torchvision's MNIST, FashionMNIST
--    and CIFAR10 with no transform or ToTensor/Normalize, and Subsets of these)
--    describe themselves to C (the _c_source method) and batches are gathered
--    and collated with no Lua: in the main thread when num_workers == 0, ahead of
--    time in num_workers C threads otherwise (torch._data.Loader).
--  * Lua: every other dataset, and any custom collate_fn, run in the main thread,
--    whatever num_workers says (a Lua state is single-threaded; worker_init_fn is
--    called there once per worker id, with get_worker_info() set meanwhile).
-- The main thread always draws the index order from the sampler, so a seed
-- gives the same batches with and without workers.
local torch = require "torch"
local U = require "nn_util"
local C = torch._data

torch.utils = torch.utils or {}
local data = {}
torch.utils.data = data

local unpack, pack = table.unpack, table.pack
-- errors point at the user's line, outside this library
local raise = U.error

-- ---- small helpers ----

local function is_plain(t) return type(t) == "table" and getmetatable(t) == nil end

local function check_keys(fname, opts, allowed)
  if opts == nil then return end
  local set = {}
  for _, k in ipairs(allowed) do set[k] = true end
  for k in pairs(opts) do
    if not set[k] then raise(string.format("%s: unknown keyword '%s'", fname, tostring(k))) end
  end
end

local function is_int(v) return math.type(v) == "integer" end

local function pyrepr(v)
  if v == nil then return "None" end
  if v == true then return "True" elseif v == false then return "False" end
  return tostring(v)
end

-- An iterator function over a sampler-like object: a sampler (:iter()), a list, or a function.
local function iterate(obj, what)
  if type(obj) == "function" then return obj end
  if type(obj) == "table" or type(obj) == "userdata" then
    local it = obj.iter
    if type(it) == "function" then return it(obj) end
    if type(obj) == "table" then
      local i = 0
      return function() i = i + 1; return obj[i] end
    end
  end
  raise(string.format("%s must be a sampler (with an iter method), a list or an iterator function, got %s", what, type(obj)))
end

local function len(obj, what)
  if type(obj) ~= "table" and type(obj) ~= "userdata" and type(obj) ~= "string" then
    raise(string.format("object of type '%s' has no len()", U.typename(obj)))
  end
  local ok, n = pcall(function() return #obj end)
  if not ok or not is_int(n) then
    if not ok and tostring(n):find("0-d tensor", 1, true) then raise("len() of a 0-d tensor") end -- Python's TypeError
    raise(string.format("%s has no length (define __len)%s", what, ok and "" or (": " .. tostring(n))))
  end
  return n
end

-- ---- classes: Class:extend("Name"), Class(...) calls __init ----

-- Instances get a per-class metatable distinct from the class (so __len,
-- __tostring and friends defined as methods are found through inheritance):
-- integer keys index the dataset (ds[i]), other keys look up the class chain.
local function class(name, parent)
  local cls = {__name = name}
  local meta = {__name = name, __class = cls}
  cls.__meta = meta
  meta.__index = function(self, k)
    if type(k) == "number" then
      local getitem = cls.__getitem_sample
      if getitem then return getitem(self, k) end
      return nil
    end
    return cls[k]
  end
  meta.__len = function(self)
    local f = cls.__len
    if not f then raise(name .. " does not define __len") end
    return f(self)
  end
  meta.__tostring = function(self)
    local f = cls.__tostring
    if f then return f(self) end
    return string.format("<%s object at %s>", name, string.format("%p", self))
  end
  meta.__add = function(a, b)
    local f = cls.__add
    if not f then raise("attempt to add two " .. name .. " objects") end
    return f(a, b)
  end
  meta.__call = function(self, ...)
    local f = cls.__call
    if not f then raise("attempt to call a " .. name .. " object") end
    return f(self, ...)
  end
  setmetatable(cls, {
    __index = parent,
    __call = function(c, ...)
      local obj = setmetatable({}, meta)
      obj:__init(...)
      return obj
    end,
    __tostring = function() return "<class '" .. name .. "'>" end,
  })
  return cls
end

local Object = class("Object")
function Object:__init() end
function Object:extend(name)
  if type(name) ~= "string" then raise("extend expects a class name (string)") end
  return class(name, self)
end

-- isinstance(obj, cls): obj's class is cls or derives from it
local function isinstance(obj, cls)
  local mt = type(obj) == "table" and getmetatable(obj)
  local c = mt and rawget(mt, "__class")
  while c do
    if c == cls then return true end
    local pm = getmetatable(c)
    c = pm and pm.__index
  end
  return false
end
data.isinstance = isinstance

-- ---- Dataset ----

local Dataset = Object:extend("Dataset")
data.Dataset = Dataset

function Dataset:__getitem(i)
  raise(string.format("%s must define __getitem(i)", getmetatable(self).__name))
end

-- the sample at i: one value as itself, several as a list
local function as_sample(...)
  local n = select("#", ...)
  if n == 1 then return (...) end
  local t = {...}
  return t
end

function Dataset:__getitem_sample(i) return as_sample(self:__getitem(i)) end
function Dataset:get(i) return self:__getitem(i) end
function Dataset:__add(other) return data.ConcatDataset({self, other}) end

-- the sample at i of anything dataset-like: a Dataset, a Lua list of samples, an object with __getitem
local function sample_at(ds, i)
  if is_plain(ds) then
    local n = #ds
    if i < 0 then i = i + n end
    if i < 0 or i >= n then raise(string.format("list index %d out of range for a dataset of size %d", i, n)) end
    return ds[i + 1]
  end
  if torch.is_tensor(ds) then return ds[i] end -- a tensor is a dataset of its rows, a string of its characters, as in PyTorch
  if type(ds) == "string" then return ds:sub(i + 1, i + 1) end
  if type(ds) ~= "table" or type(ds.__getitem) ~= "function" then
    if type(ds) == "table" and ds.__class then raise("Subclasses of Dataset should implement __getitem__.") end
    raise(string.format("'%s' object is not subscriptable", U.typename(ds)))
  end
  return as_sample(ds:__getitem(i))
end

-- The C description of ds (a torch._data Source) or nil.
local function c_source(ds)
  if type(ds) ~= "table" then return nil end
  local f = ds._c_source
  if type(f) ~= "function" then return nil end
  return f(ds)
end
data._c_source = c_source

-- Cache a Source on obj keyed by `key` (anything whose change invalidates it).
local function cached_source(obj, key, make)
  local c = rawget(obj, "_c_cache")
  if c and c.key == key then return c.source end
  local ok, s = pcall(make)
  if not ok then s = nil end
  rawset(obj, "_c_cache", {key = key, source = s or false})
  return s or nil
end

-- ---- TensorDataset ----

local TensorDataset = Dataset:extend("TensorDataset")
data.TensorDataset = TensorDataset

function TensorDataset:__init(...)
  local tensors = {...}
  if #tensors == 1 and is_plain(tensors[1]) then tensors = tensors[1] end
  for i, t in ipairs(tensors) do
    if not torch.is_tensor(t) then raise(string.format("TensorDataset: argument %d is not a tensor (%s)", i, type(t))) end
  end
  local n = tensors[1] and tensors[1]:size(0)
  for _, t in ipairs(tensors) do
    if t:size(0) ~= n then raise("Size mismatch between tensors") end
  end
  self.tensors = tensors
end

function TensorDataset:__getitem(i)
  local ts, out = self.tensors, {}
  local n = ts[1] and ts[1]:size(0)
  if n and math.type(i) == "integer" and (i < -n or i >= n) then
    raise(string.format("index %d is out of bounds for dimension 0 with size %d", i, n))
  end
  for k = 1, #ts do out[k] = ts[k][i] end
  return unpack(out, 1, #ts)
end

function TensorDataset:__len() return self.tensors[1] and self.tensors[1]:size(0) or 0 end

function TensorDataset:_c_source()
  if self.__getitem ~= TensorDataset.__getitem or #self.tensors == 0 then return nil end
  local key = {}
  for k, t in ipairs(self.tensors) do key[k] = t end
  local c = rawget(self, "_c_cache")
  if c and #c.key == #key then
    local same = true
    for k = 1, #key do same = same and rawequal(c.key[k], key[k]) end
    if same then return c.source or nil end
  end
  return cached_source(self, key, function()
    local fields = {}
    for k, t in ipairs(self.tensors) do fields[k] = {t} end
    return C.Source(fields)
  end)
end

-- ---- Subset, ConcatDataset, random_split ----

local Subset = Dataset:extend("Subset")
data.Subset = Subset

function Subset:__init(dataset, indices)
  self.dataset = dataset
  if torch.is_tensor(indices) then indices = indices:tolist() end
  if type(indices) ~= "table" then raise("Subset: indices must be a list or a tensor") end
  self.indices = indices
end

function Subset:__getitem(i)
  local n = #self.indices
  if i < 0 then i = i + n end
  local j = self.indices[i + 1]
  if j == nil or i < 0 then raise(string.format("Subset: index %d is out of range for a subset of size %d", i, n)) end
  if is_plain(self.dataset) then return sample_at(self.dataset, j) end
  return self.dataset:__getitem(j)
end

function Subset:__len() return #self.indices end

function Subset:_c_source()
  if self.__getitem ~= Subset.__getitem then return nil end
  local base = c_source(self.dataset)
  if not base then return nil end
  return cached_source(self, base, function() return base:subset(self.indices) end)
end

local ConcatDataset = Dataset:extend("ConcatDataset")
data.ConcatDataset = ConcatDataset

function ConcatDataset:__init(datasets)
  if type(datasets) ~= "table" or #datasets == 0 then raise("datasets should not be an empty iterable") end
  self.datasets = {}
  self.cumulative_sizes = {}
  local total = 0
  for k, d in ipairs(datasets) do
    if isinstance(d, data.IterableDataset) then raise("ConcatDataset does not support IterableDataset") end
    self.datasets[k] = d
    total = total + len(d, "a dataset of ConcatDataset")
    self.cumulative_sizes[k] = total
  end
end

function ConcatDataset:__len() return self.cumulative_sizes[#self.cumulative_sizes] end

function ConcatDataset:__getitem(i)
  local n = #self
  if i < 0 then
    if -i > n then raise("absolute value of index should not exceed dataset length") end
    i = i + n
  end
  if i >= n then raise(string.format("ConcatDataset: index %d is out of range for a dataset of size %d", i, n)) end
  local cs = self.cumulative_sizes
  local lo, hi = 1, #cs -- first k with cs[k] > i
  while lo < hi do
    local mid = (lo + hi) // 2
    if cs[mid] > i then hi = mid else lo = mid + 1 end
  end
  local start = lo > 1 and cs[lo - 1] or 0
  local d = self.datasets[lo]
  if is_plain(d) then return sample_at(d, i - start) end
  return d:__getitem(i - start)
end

-- A generator given as itself or as {generator = g} (Python's generator= keyword)
local function generator_arg(fname, g)
  if type(g) ~= "table" then return g end
  check_keys(fname, g, { "generator" })
  return g.generator
end

-- random_split(dataset, lengths, generator | {generator=}): lengths are counts or fractions summing to 1.
function data.random_split(dataset, lengths, generator)
  generator = generator_arg("random_split", generator)
  local n = len(dataset, "random_split's dataset")
  if type(lengths) ~= "table" then raise("random_split: lengths must be a list") end
  local sum = 0
  for _, l in ipairs(lengths) do sum = sum + l end
  if math.abs(sum - 1) <= 1e-9 and sum <= 1 then
    local counts, total = {}, 0
    for i, frac in ipairs(lengths) do
      if frac < 0 or frac > 1 then raise(string.format("Fraction at index %d is not between 0 and 1", i - 1)) end
      counts[i] = math.floor(n * frac)
      total = total + counts[i]
    end
    for i = 0, n - total - 1 do
      local k = i % #counts + 1
      counts[k] = counts[k] + 1
    end
    for i, c in ipairs(counts) do
      if c == 0 then
        io.stderr:write(string.format("UserWarning: Length of split at index %d is 0. This might result in an empty dataset.\n", i - 1))
      end
    end
    lengths = counts
  end
  sum = 0
  for _, l in ipairs(lengths) do
    if not is_int(l) and not (type(l) == "number" and l == math.floor(l)) then
      raise("random_split: lengths must be integers, or fractions that sum to 1")
    end
    sum = sum + l
  end
  if sum ~= n then raise("Sum of input lengths does not equal the length of the input dataset!") end
  local perm = C.randperm(n, generator)
  local out, offset = {}, 0
  for k, l in ipairs(lengths) do
    local idx = table.move(perm, offset + 1, offset + math.tointeger(l), 1, {})
    out[k] = Subset(dataset, idx)
    offset = offset + math.tointeger(l)
  end
  return out
end

-- ---- StackDataset ----
-- StackDataset(a, b, ...) gives {a[i], b[i], ...}; StackDataset({x = a, y = b}) gives {x = a[i], y = b[i]}.
local StackDataset = Dataset:extend("StackDataset")
data.StackDataset = StackDataset

function StackDataset:__init(...)
  local args = pack(...)
  local named = args.n == 1 and is_plain(args[1]) and args[1][1] == nil and next(args[1]) ~= nil
  if args.n == 0 then raise("At least one dataset should be passed") end
  self.datasets, self._named = named and args[1] or {unpack(args, 1, args.n)}, named
  local n
  for _, d in pairs(self.datasets) do
    local m = len(d, "a dataset of StackDataset")
    if n and m ~= n then raise("Size mismatch between datasets") end
    n = m
  end
  self._length = n
end
function StackDataset:__len() return self._length end
function StackDataset:__getitem(i)
  local out = {}
  for k, d in pairs(self.datasets) do out[k] = sample_at(d, i) end
  return out
end

-- ---- IterableDataset ----
-- A stream of samples: a subclass defines __iter(), returning an iterator
-- function whose calls give the next sample (one value, or several) and nil at
-- the end. The DataLoader batches the stream in order; it has no sampler.

local IterableDataset = Dataset:extend("IterableDataset")
data.IterableDataset = IterableDataset

function IterableDataset:__iter()
  raise(string.format("%s must define __iter()", getmetatable(self).__name))
end
function IterableDataset:__getitem()
  raise(string.format("%s is an IterableDataset: it has no __getitem; iterate it with :iter()", getmetatable(self).__name))
end
function IterableDataset:__add(other) return data.ChainDataset({self, other}) end

-- the dataset's own iterator, checked
function IterableDataset:iter()
  local it = self:__iter()
  if type(it) ~= "function" then
    raise(string.format("%s:__iter() must return an iterator function, got %s", getmetatable(self).__name, type(it)))
  end
  return it
end

-- next() over ds's samples (several values packed as a list), nil at the end
-- and after it (the iterator is not called again: a finished coroutine.wrap would raise)
local function sample_stream(ds)
  local it = ds:iter()
  local function first(a, ...)
    if a == nil then
      it = nil
      return nil
    end
    return as_sample(a, ...)
  end
  return function()
    if it then return first(it()) end
  end
end

local ChainDataset = IterableDataset:extend("ChainDataset")
data.ChainDataset = ChainDataset

function ChainDataset:__init(datasets)
  if type(datasets) ~= "table" then raise("ChainDataset: datasets must be a list of IterableDatasets") end
  for k, d in ipairs(datasets) do
    if not isinstance(d, IterableDataset) then raise("ChainDataset only supports IterableDataset") end
  end
  self.datasets = datasets
end

function ChainDataset:__iter()
  local k, it = 0, nil
  return function()
    while true do
      if not it then
        k = k + 1
        local d = self.datasets[k]
        if d == nil then return nil end
        it = d:iter()
      end
      local r = pack(it())
      if r[1] ~= nil then return unpack(r, 1, r.n) end
      it = nil
    end
  end
end

function ChainDataset:__len()
  local n = 0
  for _, d in ipairs(self.datasets) do n = n + len(d, "a dataset of ChainDataset") end
  return n
end

-- ---- samplers ----

local Sampler = Object:extend("Sampler")
data.Sampler = Sampler
function Sampler:__init(data_source) end
function Sampler:iter()
  raise(getmetatable(self).__name .. " must define iter() (an iterator over indices)")
end
-- the epoch's indices as a list (the samplers below draw them in one go)
function Sampler:indices()
  local out = {}
  for i in self:iter() do out[#out + 1] = i end
  return out
end

local function list_iter(list)
  local i = 0
  return function() i = i + 1; return list[i] end
end

local SequentialSampler = Sampler:extend("SequentialSampler")
data.SequentialSampler = SequentialSampler
function SequentialSampler:__init(data_source) self.data_source = data_source end
function SequentialSampler:__len() return len(self.data_source, "the sampler's data_source") end
function SequentialSampler:iter()
  local n, i = #self, -1
  return function()
    i = i + 1
    if i < n then return i end
  end
end
function SequentialSampler:indices()
  local out = {}
  for i = 1, #self do out[i] = i - 1 end
  return out
end

-- opts helper for positional-or-keyword constructors
local function opts_after(fname, args, first, names)
  local last = args[first]
  if is_plain(last) and last[1] == nil then
    check_keys(fname, last, names)
    return last
  end
  local o = {}
  for k, name in ipairs(names) do o[name] = args[first + k - 1] end
  return o
end

local RandomSampler = Sampler:extend("RandomSampler")
data.RandomSampler = RandomSampler
function RandomSampler:__init(data_source, ...)
  local o = opts_after("RandomSampler", pack(...), 1, {"replacement", "num_samples", "generator"})
  self.data_source = data_source
  self.replacement = o.replacement or false
  self._num_samples = o.num_samples
  self.generator = o.generator
  if type(self.replacement) ~= "boolean" then
    raise("replacement should be a boolean value, but got replacement=" .. pyrepr(self.replacement))
  end
  local ns = self:num_samples()
  if not is_int(ns) or ns <= 0 then
    raise("num_samples should be a positive integer value, but got num_samples=" .. pyrepr(ns))
  end
end
function RandomSampler:num_samples()
  return self._num_samples or len(self.data_source, "the sampler's data_source")
end
function RandomSampler:__len() return self:num_samples() end
function RandomSampler:indices()
  local n, want = len(self.data_source, "the sampler's data_source"), self:num_samples()
  local g = self.generator
  if g == nil then g = torch.Generator():manual_seed(C.random_seed()) end
  local out = {}
  if self.replacement then
    local u = C.uniform(want, g)
    for k = 1, want do out[k] = math.floor(u[k] * n) end
    return out
  end
  while #out + n <= want do table.move(C.randperm(n, g), 1, n, #out + 1, out) end
  if #out < want then table.move(C.randperm(n, g), 1, want - #out, #out + 1, out) end
  return out
end
function RandomSampler:iter() return list_iter(self:indices()) end

local SubsetRandomSampler = Sampler:extend("SubsetRandomSampler")
data.SubsetRandomSampler = SubsetRandomSampler
function SubsetRandomSampler:__init(indices, generator)
  generator = generator_arg("SubsetRandomSampler", generator)
  if torch.is_tensor(indices) then indices = indices:tolist() end
  self.indices_ = indices
  self.generator = generator
end
function SubsetRandomSampler:__len() return #self.indices_ end
function SubsetRandomSampler:indices()
  local perm, out = C.randperm(#self.indices_, self.generator), {}
  for k, p in ipairs(perm) do out[k] = self.indices_[p + 1] end
  return out
end
function SubsetRandomSampler:iter() return list_iter(self:indices()) end

local WeightedRandomSampler = Sampler:extend("WeightedRandomSampler")
data.WeightedRandomSampler = WeightedRandomSampler
function WeightedRandomSampler:__init(weights, num_samples, ...)
  local o = opts_after("WeightedRandomSampler", pack(...), 1, {"replacement", "generator"})
  if is_plain(num_samples) then
    check_keys("WeightedRandomSampler", num_samples, {"num_samples", "replacement", "generator"})
    o, num_samples = num_samples, num_samples.num_samples
  end
  local replacement = o.replacement
  if replacement == nil then replacement = true end
  if not is_int(num_samples) or num_samples <= 0 then
    raise("num_samples should be a positive integer value, but got num_samples=" .. pyrepr(num_samples))
  end
  if type(replacement) ~= "boolean" then
    raise("replacement should be a boolean value, but got replacement=" .. pyrepr(replacement))
  end
  if torch.is_tensor(weights) then
    if weights:dim() ~= 1 then
      raise(string.format("weights should be a 1d sequence but given weights have shape %s", tostring(weights.shape):match("%b()")))
    end
    weights = weights:tolist()
  end
  local total = 0
  for _, w in ipairs(weights) do
    if type(w) ~= "number" or w ~= w or w < 0 or w == math.huge then
      raise("invalid multinomial distribution (encountering probability entry < 0, inf or nan)")
    end
    total = total + w
  end
  if total <= 0 then raise("invalid multinomial distribution (sum of probabilities <= 0)") end
  self.weights, self.num_samples, self.replacement, self.generator = weights, num_samples, replacement, o.generator
  self._total = total
end
function WeightedRandomSampler:__len() return self.num_samples end
function WeightedRandomSampler:indices()
  local w, n, out = self.weights, self.num_samples, {}
  local u = C.uniform(n > #w and n or #w, self.generator)
  if self.replacement then
    local cum, acc = {}, 0
    for k = 1, #w do acc = acc + w[k]; cum[k] = acc end
    for k = 1, n do
      local x = u[k] * acc
      local lo, hi = 1, #cum -- first k with cum[k] > x and a nonzero weight
      while lo < hi do
        local mid = (lo + hi) // 2
        if cum[mid] > x then hi = mid else lo = mid + 1 end
      end
      while w[lo] == 0 and lo < #w do lo = lo + 1 end
      out[k] = lo - 1
    end
    return out
  end
  -- without replacement: the n largest keys log(u)/w (Efraimidis-Spirakis)
  local keys, order = {}, {}
  for k = 1, #w do
    if w[k] > 0 then
      order[#order + 1] = k
      keys[k] = math.log(u[k] > 0 and u[k] or 1e-300) / w[k]
    end
  end
  if n > #order then raise("cannot sample n_sample > prob_dist.size(-1) samples without replacement") end
  table.sort(order, function(a, b) return keys[a] > keys[b] end)
  for k = 1, n do out[k] = order[k] - 1 end
  return out
end
function WeightedRandomSampler:iter() return list_iter(self:indices()) end

local BatchSampler = Sampler:extend("BatchSampler")
data.BatchSampler = BatchSampler
function BatchSampler:__init(sampler, batch_size, drop_last)
  if is_plain(batch_size) then
    check_keys("BatchSampler", batch_size, {"batch_size", "drop_last"})
    batch_size, drop_last = batch_size.batch_size, batch_size.drop_last
  end
  if type(batch_size) == "boolean" or not is_int(batch_size) or batch_size <= 0 then
    raise("batch_size should be a positive integer value, but got batch_size=" .. pyrepr(batch_size))
  end
  if type(drop_last) ~= "boolean" then
    raise("drop_last should be a boolean value, but got drop_last=" .. pyrepr(drop_last))
  end
  self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last
end
function BatchSampler:__len()
  local n = len(self.sampler, "the BatchSampler's sampler")
  if self.drop_last then return n // self.batch_size end
  return (n + self.batch_size - 1) // self.batch_size
end
-- the epoch's batches as a list of lists
function BatchSampler:batches()
  local s, bs = self.sampler, self.batch_size
  local idx
  if type(s) == "table" and type(s.indices) == "function" then idx = s:indices()
  elseif is_plain(s) then idx = s
  else
    idx = {}
    for i in iterate(s, "sampler") do idx[#idx + 1] = i end
  end
  local out, n = {}, #idx
  for start = 1, n, bs do
    local stop = math.min(start + bs - 1, n)
    if stop - start + 1 < bs and self.drop_last then break end
    out[#out + 1] = table.move(idx, start, stop, 1, {})
  end
  return out
end
function BatchSampler:iter()
  local bs, batch = self.batch_size, {}
  local it = iterate(self.sampler, "sampler")
  local done = false
  return function()
    if done then return nil end
    for i in it do
      batch[#batch + 1] = i
      if #batch == bs then
        local b = batch
        batch = {}
        return b
      end
    end
    done = true
    if #batch > 0 and not self.drop_last then return batch end
  end
end

local DistributedSampler = Sampler:extend("DistributedSampler")
data.DistributedSampler = DistributedSampler
function DistributedSampler:__init(dataset, opts, ...)
  if not is_plain(opts) or opts[1] ~= nil then
    opts = opts_after("DistributedSampler", pack(opts, ...), 1, {"num_replicas", "rank", "shuffle", "seed", "drop_last"})
  end
  check_keys("DistributedSampler", opts, {"num_replicas", "rank", "shuffle", "seed", "drop_last"})
  local num_replicas, rank = opts.num_replicas, opts.rank
  local dist = torch.distributed
  if num_replicas == nil or rank == nil then
    if not (dist and dist.is_available and dist.is_available() and dist.is_initialized and dist.is_initialized()) then
      raise("DistributedSampler: num_replicas and rank are needed when the default process group is not initialized " ..
        "(call torch.distributed.init_process_group first, or pass them)")
    end
    num_replicas = num_replicas or dist.get_world_size()
    rank = rank or dist.get_rank()
  end
  if not is_int(num_replicas) or num_replicas < 1 then
    raise("DistributedSampler: num_replicas must be a positive integer, got " .. pyrepr(num_replicas))
  end
  if not is_int(rank) or rank >= num_replicas or rank < 0 then
    raise(string.format("Invalid rank %s, rank should be in the interval [0, %d]", pyrepr(rank), num_replicas - 1))
  end
  self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
  self.epoch = 0
  self.drop_last = opts.drop_last or false
  self.shuffle = opts.shuffle ~= false
  self.seed = opts.seed or 0
  local n = len(dataset, "DistributedSampler's dataset")
  if self.drop_last and n % num_replicas ~= 0 then
    self.num_samples = math.ceil((n - num_replicas) / num_replicas)
  else
    self.num_samples = math.ceil(n / num_replicas)
  end
  self.num_samples = math.tointeger(self.num_samples)
  self.total_size = self.num_samples * num_replicas
end
function DistributedSampler:set_epoch(epoch) self.epoch = epoch end
function DistributedSampler:__len() return self.num_samples end
function DistributedSampler:indices()
  local n = len(self.dataset, "DistributedSampler's dataset")
  local idx
  if self.shuffle then
    idx = C.randperm(n, torch.Generator():manual_seed(self.seed + self.epoch))
  else
    idx = {}
    for i = 1, n do idx[i] = i - 1 end
  end
  if not self.drop_last then
    local pad, base = self.total_size - #idx, #idx
    for k = 1, pad do idx[base + k] = idx[(k - 1) % base + 1] end
  else
    for k = #idx, self.total_size + 1, -1 do idx[k] = nil end
  end
  local out = {}
  for k = self.rank + 1, self.total_size, self.num_replicas do out[#out + 1] = idx[k] end
  return out
end
function DistributedSampler:iter() return list_iter(self:indices()) end

-- ---- collation ----

local function collate(batch, depth)
  local elem = batch[1]
  if elem == nil then raise("default_collate: empty batch") end
  local t = type(elem)
  if torch.is_tensor(elem) then return torch.stack(batch, 0) end
  if t == "number" then
    if math.type(elem) == "integer" then return torch.tensor(batch) end
    return torch.tensor(batch, {dtype = torch.float64})
  end
  if t == "boolean" then return torch.tensor(batch) end
  if t == "string" then return batch end
  if is_plain(elem) then
    if elem[1] ~= nil or next(elem) == nil then
      local n = #elem
      for k = 2, #batch do
        if type(batch[k]) ~= "table" or #batch[k] ~= n then
          raise("each element in list of batch should be of equal size")
        end
      end
      local out = {}
      for f = 1, n do
        local column = {}
        for k = 1, #batch do column[k] = batch[k][f] end
        out[f] = collate(column, depth + 1)
      end
      return out
    end
    local out = {}
    for key in pairs(elem) do
      local column = {}
      for k = 1, #batch do column[k] = batch[k][key] end
      out[key] = collate(column, depth + 1)
    end
    return out
  end
  raise("default_collate: batch must contain tensors, numbers, dicts or lists; found " .. t)
end

function data.default_collate(batch)
  if torch.is_tensor(batch) then raise("stack(): argument 'tensors' (position 1) must be tuple of Tensors, not Tensor") end
  if type(batch) ~= "table" then raise(string.format("'%s' object is not subscriptable", U.typename(batch))) end
  return collate(batch, 3)
end
function data.default_convert(sample) return sample end

-- get_worker_info(): nil in the main thread; set while worker_init_fn runs
local worker_info = nil
function data.get_worker_info() return worker_info end

-- ---- DataLoader ----

local DataLoader = Object:extend("DataLoader")
data.DataLoader = DataLoader

local loader_keys = {"dataset", "batch_size", "shuffle", "sampler", "batch_sampler", "num_workers", "collate_fn",
  "pin_memory", "drop_last", "timeout", "worker_init_fn", "multiprocessing_context", "generator", "prefetch_factor",
  "persistent_workers", "pin_memory_device", "in_order"}
local positional = {"batch_size", "shuffle", "sampler", "batch_sampler", "num_workers", "collate_fn", "pin_memory", "drop_last"}

function DataLoader:__init(dataset, ...)
  local o
  local args = pack(...)
  if is_plain(dataset) and dataset[1] == nil and dataset.dataset ~= nil and args.n == 0 then
    o = dataset
    dataset = o.dataset
  elseif is_plain(args[args.n]) and args[args.n][1] == nil then
    o = args[args.n]
    for k = 1, args.n - 1 do
      if o[positional[k]] ~= nil then raise("DataLoader: " .. positional[k] .. " given twice") end
      o[positional[k]] = args[k]
    end
  else
    o = {}
    for k = 1, args.n do o[positional[k] or "?"] = args[k] end
  end
  check_keys("DataLoader", o, loader_keys)
  if dataset == nil then raise("DataLoader: a dataset is required") end
  local batch_size = o.batch_size
  if batch_size == nil then batch_size = 1 end
  local shuffle, sampler, batch_sampler = o.shuffle, o.sampler, o.batch_sampler
  local num_workers = o.num_workers or 0
  local drop_last = o.drop_last or false
  local prefetch_factor = o.prefetch_factor
  local persistent = o.persistent_workers or false
  local timeout = o.timeout or 0

  if not is_int(num_workers) or num_workers < 0 then
    raise("num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
  end
  if type(timeout) ~= "number" or timeout < 0 then raise("timeout option should be non-negative") end
  if num_workers == 0 and prefetch_factor ~= nil then
    raise("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 to enable " ..
      "multiprocessing, otherwise set prefetch_factor to None.")
  end
  if num_workers > 0 and prefetch_factor == nil then prefetch_factor = 2 end
  if prefetch_factor ~= nil and (not is_int(prefetch_factor) or prefetch_factor < 0) then
    raise("prefetch_factor option should be non-negative")
  end
  if persistent and num_workers == 0 then raise("persistent_workers option needs num_workers > 0") end
  local iterable = isinstance(dataset, IterableDataset)
  if iterable then
    for _, key in ipairs({"shuffle", "sampler", "batch_sampler"}) do
      local v = o[key]
      if v ~= nil and v ~= false then
        raise(string.format("DataLoader with IterableDataset: expected unspecified %s option, but got %s=%s",
          key, key, pyrepr(v)))
      end
    end
  end
  if sampler ~= nil and shuffle then raise("sampler option is mutually exclusive with shuffle") end
  if batch_sampler ~= nil then
    if batch_size ~= 1 or shuffle or sampler ~= nil or drop_last then
      raise("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last")
    end
    batch_size, drop_last = nil, false
  elseif batch_size == false then -- batch_size=None: no automatic batching
    batch_size = nil
    if drop_last then
      raise("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
    end
  end
  if iterable then -- the stream is its own order: no sampler
    batch_sampler = nil
  elseif sampler == nil then
    if shuffle then sampler = RandomSampler(dataset, {generator = o.generator})
    else sampler = SequentialSampler(dataset) end
  end
  if batch_size ~= nil and batch_sampler == nil and not iterable then batch_sampler = BatchSampler(sampler, batch_size, drop_last) end

  self.dataset = dataset
  self.batch_size = batch_size
  self.drop_last = drop_last
  self.sampler = sampler
  self.batch_sampler = batch_sampler
  self.num_workers = num_workers
  self.prefetch_factor = prefetch_factor
  self.pin_memory = o.pin_memory or false
  self.timeout = timeout
  self.worker_init_fn = o.worker_init_fn
  self.generator = o.generator
  self.persistent_workers = persistent
  self._iterable = iterable
  self._auto_collation = batch_sampler ~= nil or (iterable and batch_size ~= nil)
  self.collate_fn = o.collate_fn or (self._auto_collation and data.default_collate or data.default_convert)
end

function DataLoader:__len()
  if self._iterable then
    local n = len(self.dataset, "the IterableDataset")
    if not self._auto_collation then return n end
    if self.drop_last then return n // self.batch_size end
    return (n + self.batch_size - 1) // self.batch_size
  end
  if self._auto_collation then return len(self.batch_sampler, "the batch_sampler") end
  return len(self.sampler, "the sampler")
end

function DataLoader:__tostring() return string.format("<torch.utils.data.DataLoader object at %p>", self) end

-- the batches of one epoch, as lists of indices
local function epoch_batches(self)
  local bs = self.batch_sampler
  if type(bs) == "table" and type(bs.batches) == "function" then return bs:batches() end
  local out = {}
  for b in iterate(bs, "batch_sampler") do
    if torch.is_tensor(b) then b = b:tolist() end
    out[#out + 1] = b
  end
  return out
end

-- get_worker_info() for each worker; datasets[k]: worker k's dataset (default: the loader's)
local function worker_infos(self, datasets)
  local base = C.random_seed(self.generator)
  local infos = {}
  for id = 0, self.num_workers - 1 do
    infos[id + 1] = {id = id, num_workers = self.num_workers, seed = base + id,
      dataset = datasets and datasets[id + 1] or self.dataset}
  end
  return infos
end

-- f(...) with get_worker_info() answering info
local function as_worker(info, f, ...)
  worker_info = info
  local r = pack(pcall(f, ...))
  worker_info = nil
  if not r[1] then error(r[2], 0) end
  return unpack(r, 2, r.n)
end

local function call_worker_init(self, infos)
  local fn = self.worker_init_fn
  if not fn then return end
  for id, info in ipairs(infos or worker_infos(self)) do as_worker(info, fn, id - 1) end
end

local function pin_all(b)
  if torch.is_tensor(b) then
    local f = b.pin_memory
    return f and f(b) or b
  end
  if is_plain(b) then
    local out = {}
    for k, v in pairs(b) do out[k] = pin_all(v) end
    return out
  end
  return b
end

-- a batch as the values the loop variables get: a list's items, anything else itself
local function spread(b)
  if is_plain(b) and b[1] ~= nil then return unpack(b, 1, #b) end
  return b
end

local function lua_fetch(ds, indices)
  if type(ds) == "table" and not is_plain(ds) and type(ds.__getitems) == "function" then return ds:__getitems(indices) end
  local samples = {}
  for k = 1, #indices do samples[k] = sample_at(ds, indices[k]) end
  return samples
end

-- ---- the device fast path: a TensorDataset cut where its tensors live ----
-- A plain TensorDataset with default_collate, batched by a BatchSampler over a
-- Sequential, Random or DistributedSampler (what batch_size/shuffle/drop_last
-- build), is fetched whole batches at a time: the epoch's index order is drawn as
-- the sampler draws it (same generator, so the same batches as the per-sample
-- path), moved to each tensor's device once, and each batch is
-- t:index_select(0, order[start:stop]) (t:narrow(...):clone() in order) for every
-- tensor. No sample goes through Lua and the data never leaves its device; the
-- batches are fresh contiguous tensors, as stacking gives. On the CPU it is taken
-- when num_workers == 0 and pin_memory is off (the C path serves the others).
local function class_of(obj)
  local mt = type(obj) == "table" and getmetatable(obj)
  return mt and rawget(mt, "__class")
end

-- The epoch's order: a CPU int64 tensor, or false for 0..m-1 in order; plus m.
-- nil when the sampler is not one this path reproduces.
local function fast_order(sampler, n)
  local cls = class_of(sampler)
  if cls == SequentialSampler then
    local m = #sampler
    if m > n then return nil end
    return false, m
  elseif cls == RandomSampler and not sampler.replacement then
    -- RandomSampler:indices() drawn as tensors: same generator, same calls
    local size, want = len(sampler.data_source, "the sampler's data_source"), sampler:num_samples()
    local g = sampler.generator
    if g == nil then g = torch.Generator():manual_seed(C.random_seed()) end
    local parts, have = {}, 0
    while have + size <= want do
      parts[#parts + 1] = torch.randperm(size, {generator = g})
      have = have + size
    end
    if have < want then parts[#parts + 1] = torch.randperm(size, {generator = g}):narrow(0, 0, want - have) end
    return #parts == 1 and parts[1] or torch.cat(parts, 0), want
  elseif cls == RandomSampler or cls == DistributedSampler then
    local idx = sampler:indices()
    return torch.tensor(idx, {dtype = torch.int64}), #idx
  end
  return nil
end

-- next() over the epoch's batches on the fast path, or nil when it does not apply.
local function device_epoch(self)
  local ds, bs = self.dataset, self.batch_sampler
  if self.collate_fn ~= data.default_collate or not self._auto_collation then return nil end
  if class_of(ds) ~= TensorDataset or ds.__getitem ~= TensorDataset.__getitem then return nil end
  if class_of(bs) ~= BatchSampler or not is_int(bs.batch_size) then return nil end
  local tensors = ds.tensors
  if type(tensors) ~= "table" or #tensors == 0 then return nil end
  local on_cpu = false
  for _, t in ipairs(tensors) do
    if not torch.is_tensor(t) then return nil end
    if t.device.type == "cpu" then on_cpu = true end
  end
  if on_cpu and (self.num_workers > 0 or self.pin_memory) then return nil end
  local order, m = fast_order(bs.sampler, #ds)
  if order == nil then return nil end
  if self.num_workers > 0 then call_worker_init(self) end
  local nt = #tensors
  local dev_order = {} -- per tensor: the order on its device, moved once per device
  if order then
    local moved = {}
    for k = 1, nt do
      local dev = tensors[k].device
      local key = tostring(dev)
      moved[key] = moved[key] or order:to(dev)
      dev_order[k] = moved[key]
    end
  end
  local size, drop, start = bs.batch_size, bs.drop_last, 0
  return function()
    local count = math.min(size, m - start)
    if count <= 0 or (drop and count < size) then return end
    local out = {}
    for k = 1, nt do
      if order then
        out[k] = tensors[k]:index_select(0, dev_order[k]:narrow(0, start, count))
      else
        out[k] = tensors[k]:narrow(0, start, count):clone({ memory_format = torch.contiguous_format })
      end
    end
    start = start + count
    return unpack(out, 1, nt)
  end
end

-- An IterableDataset's epoch. With num_workers > 0 each worker has its own
-- shallow copy of the dataset (worker_init_fn may set its fields, as a worker
-- process's copy) and its own iterator, run with get_worker_info() answering for
-- it; batches come from the workers in turn, as PyTorch's in-order loader gives
-- them, so an unsharded dataset repeats once per worker as it does there.
local function iterable_epoch(self)
  local nw = self.num_workers
  local streams, infos = {}, nil
  if nw == 0 then
    streams[1] = {next = sample_stream(self.dataset)}
  else
    local copies = {}
    for k = 1, nw do
      local c = {}
      for key, v in pairs(self.dataset) do c[key] = v end
      copies[k] = setmetatable(c, getmetatable(self.dataset))
    end
    infos = worker_infos(self, copies)
    call_worker_init(self, infos)
    for k = 1, nw do streams[k] = {info = infos[k], next = as_worker(infos[k], sample_stream, copies[k])} end
  end
  local collate_fn, bs, drop = self.collate_fn, self.batch_size, self.drop_last
  local pin = self.pin_memory and torch.cuda ~= nil and torch.cuda.is_available()
  -- the next batch of stream s, or nil when it has no more
  local function batch_of(s)
    if not self._auto_collation then
      local sample = s.next()
      if sample == nil then return nil end
      return collate_fn(sample)
    end
    local samples = {}
    while #samples < bs do
      local sample = s.next()
      if sample == nil then break end
      samples[#samples + 1] = sample
    end
    if #samples == 0 or (drop and #samples < bs) then return nil end
    return collate_fn(samples)
  end
  local turn, live = 0, #streams
  return function()
    while live > 0 do
      turn = turn % #streams + 1
      local s = streams[turn]
      if not s.done then
        local b = as_worker(s.info, batch_of, s)
        if b ~= nil then
          if pin then b = pin_all(b) end
          return spread(b)
        end
        s.done, live = true, live - 1
      end
    end
  end, function() end
end

-- One epoch: returns next() (the next batch's values, nothing at the end) and finish().
local function start_epoch(self)
  if self._iterable then return iterable_epoch(self) end
  local fast = device_epoch(self)
  if fast then return fast, function() end end
  local source = self.collate_fn == data.default_collate and self._auto_collation and c_source(self.dataset)
  if source then
    local batches = epoch_batches(self)
    if self.num_workers > 0 then
      local pool = self._pool
      if pool and self._pool_source ~= source then -- the dataset changed (a new transform): new workers
        pool:close()
        pool, self._pool = nil, nil
      end
      if not pool then
        pool = C.Loader(source, self.num_workers, math.max(self.prefetch_factor, 1), self.pin_memory, self.timeout)
        call_worker_init(self)
        if self.persistent_workers then self._pool = pool end
      end
      self._pool_source = source
      pool:start(batches)
      local persistent = self.persistent_workers
      return function() return pool:next() end, function()
        if persistent then pool:stop() else pool:close() end
      end
    end
    local k, pin = 0, self.pin_memory
    return function()
      k = k + 1
      local b = batches[k]
      if b then return source:fetch(b, pin) end
    end, function() end
  end

  if self.num_workers > 0 then call_worker_init(self) end
  -- pin_memory pins only where there is a GPU (PyTorch's loader skips it otherwise)
  local ds, collate_fn = self.dataset, self.collate_fn
  local pin = self.pin_memory and torch.cuda ~= nil and torch.cuda.is_available()
  if self._auto_collation then
    local it = iterate(self.batch_sampler, "batch_sampler")
    return function()
      local b = it()
      if b == nil then return end
      if torch.is_tensor(b) then b = b:tolist() end
      local batch = collate_fn(lua_fetch(ds, b))
      if pin then batch = pin_all(batch) end
      return spread(batch)
    end, function() end
  end
  local it = iterate(self.sampler, "sampler")
  return function()
    local i = it()
    if i == nil then return end
    local batch = collate_fn(sample_at(ds, i))
    if pin then batch = pin_all(batch) end
    return spread(batch)
  end, function() end
end

local closer_mt = {__close = function(c) c.finish() end}

-- An epoch as a generic-for iterator with a closing value, so that break (or an
-- error) in the loop stops the workers. counted: values come after a step number.
local function epoch_iter(self, counted, start)
  local next_batch, finish = start_epoch(self)
  local finished = false
  local function stop()
    if not finished then
      finished = true
      finish()
    end
  end
  local step = (start or 0) - 1
  local function after(a, ...)
    if a == nil then stop(); return nil end
    return a, ...
  end
  local function after_counted(a, ...)
    if a == nil then stop(); return nil end
    step = step + 1
    return step, a, ...
  end
  local fn
  if counted then fn = function() return after_counted(next_batch()) end
  else fn = function() return after(next_batch()) end end
  return fn, nil, nil, setmetatable({finish = stop}, closer_mt)
end

function DataLoader:iter() return epoch_iter(self, false) end
function DataLoader:enumerate(start) return epoch_iter(self, true, start) end

-- `for x, y in loader do`: the first call of a loop (control value nil) starts an epoch.
function DataLoader:__call(_, control)
  if control == nil or not self._implicit then
    if self._implicit then self._implicit.finish() end
    local fn, _, _, closer = epoch_iter(self, false)
    self._implicit = {fn = fn, finish = closer.finish}
  end
  local imp = self._implicit
  return (function(a, ...)
    if a == nil then self._implicit = nil end
    return a, ...
  end)(imp.fn())
end

-- Stop and join the workers of a persistent loader (also done when it is collected).
function DataLoader:shutdown()
  if self._implicit then self._implicit.finish(); self._implicit = nil end
  if self._pool then self._pool:close(); self._pool = nil end
end

-- for scripts that import from the submodules
data.dataloader = {DataLoader = DataLoader, default_collate = data.default_collate, default_convert = data.default_convert,
  get_worker_info = data.get_worker_info}
data.dataset = {Dataset = Dataset, TensorDataset = TensorDataset, Subset = Subset, ConcatDataset = ConcatDataset,
  StackDataset = StackDataset, IterableDataset = IterableDataset, ChainDataset = ChainDataset,
  random_split = data.random_split}
data.sampler = {Sampler = Sampler, SequentialSampler = SequentialSampler, RandomSampler = RandomSampler,
  SubsetRandomSampler = SubsetRandomSampler, WeightedRandomSampler = WeightedRandomSampler, BatchSampler = BatchSampler}
data.distributed = {DistributedSampler = DistributedSampler}

return data
