-- Containers: Sequential, ModuleList, ModuleDict.
--
-- Sequential and ModuleList index from 0 like PyTorch (s[0] is the first module,
-- s[-1] the last), # counts the modules, and pairs(s) / s:enumerate() walk
-- (index, module) in order, 0-based like Python's enumerate. ModuleDict is
-- indexed by key and pairs(md) walks (key, module) in insertion order.
--
-- Python's `for m in model:` is `for _, m in pairs(model)` (or s:enumerate(), or
-- ipairs(s:children()) for 1-based positions). ipairs(s) cannot work: Lua's ipairs
-- starts at s[1], which is the second module, so it raises a clear error at its
-- first step instead (found by seeing ipairs' iterator on the call stack).
-- Explicit indexing out of range stays an IndexError, as in PyTorch.
local U = require "nn_util"
local Module = require "nn_module"

local OD = U.OrderedDict
local M = {}

local function is_module(v) return Module.is_module(v) end

-- The key at 0-based position idx (negative from the end), or an IndexError.
local function key_at(self, idx, fname)
  local i = math.tointeger(idx)
  if i == nil then U.errorf("%s indices must be integers, got %s", fname, U.typename(idx)) end
  local keys = self._modules:keys()
  local n = #keys
  if i < -n or i >= n then U.errorf("index %d is out of range", i) end
  if i < 0 then i = i + n end
  return keys[i + 1], i
end

local function count(self) return #self._modules end

local ipairs_step = ipairs({})

-- Raise when s[1] is read by ipairs' iterator (a few frames up: __index, __getitem).
local function refuse_ipairs(self, idx)
  if idx ~= 1 then return end
  for level = 3, 6 do
    local info = debug.getinfo(level, "f")
    if info == nil then return end
    if info.func == ipairs_step then
      local name = self:_get_name()
      U.errorf("ipairs() cannot walk a %s: it indexes from 0 like PyTorch (s[0] is the first module), so " ..
        "ipairs would skip the first; use pairs(s) or s:enumerate() for (0-based index, module), or " ..
        "ipairs(s:children())", name)
    end
  end
end

local function enumerate(self)
  local mods = self._modules:values()
  local i = 0
  return function()
    i = i + 1
    local m = mods[i]
    if m == nil then return nil end
    return i - 1, m
  end, self, nil
end

-- Renumber keys "0".."n-1" after a removal or insertion (PyTorch keeps them dense).
local function renumber(self, mods)
  local values = getmetatable(self).__index
  for _, k in ipairs(self._modules:keys()) do
    self._modules:remove(k)
    values[k] = nil
  end
  for i, m in ipairs(mods) do self:add_module(tostring(i - 1), m) end
end

-- ---- Sequential ----

local Sequential = Module:extend("Sequential")
M.Sequential = Sequential

-- Sequential(m1, m2, ...), Sequential({{"conv1", m1}, {"relu", m2}}) or Sequential(OrderedDict)
function Sequential:__init(...)
  local n = select("#", ...)
  local first = ...
  if n == 1 and OD.is(first) then
    for k, m in pairs(first) do self:add_module(k, m) end
  elseif n == 1 and type(first) == "table" and not is_module(first) and getmetatable(first) == nil then
    for i, e in ipairs(first) do
      if is_module(e) then
        self:add_module(tostring(i - 1), e)
      elseif type(e) == "table" and type(e[1]) == "string" then
        self:add_module(e[1], e[2])
      else
        U.errorf("Sequential: entry %d must be a module or a {name, module} pair", i)
      end
    end
  else
    for i = 1, n do self:add_module(tostring(i - 1), (select(i, ...))) end
  end
end

function Sequential:__getitem(idx)
  refuse_ipairs(self, idx)
  return self._modules[key_at(self, idx, "Sequential")]
end
function Sequential:__setitem(idx, m) self[key_at(self, idx, "Sequential")] = m end
Sequential.__len = count
Sequential.__pairs = enumerate
Sequential.enumerate = enumerate

function Sequential:forward(input)
  for _, m in pairs(self._modules) do input = m(input) end
  return input
end

function Sequential:append(m)
  self:add_module(tostring(#self._modules), m)
  return self
end

-- extend: on an instance, Python's Sequential.extend (append modules); on the class itself,
-- the class system's extend, so nn.Sequential:extend("MySeq") makes a subclass.
local function extend_or_subclass(append_all)
  return function(self, x)
    if rawget(self, "__class") == self then return Module.extend(self, x) end
    return append_all(self, x)
  end
end

Sequential.extend = extend_or_subclass(function(self, list)
  local mods = is_module(list) and list:children() or list
  for _, m in ipairs(mods) do self:append(m) end
  return self
end)

-- insert(index, module): before position index (0-based, negative from the end)
function Sequential:insert(index, m)
  if not is_module(m) then U.errorf("module should be of type: Module, got %s", U.typename(m)) end
  local mods = self._modules:values()
  local n = #mods
  local i = math.tointeger(index)
  if i == nil or i < -n or i > n then U.errorf("Index out of range: %s", tostring(index)) end
  if i < 0 then i = i + n end
  table.insert(mods, i + 1, m)
  renumber(self, mods)
  return self
end

-- pop(index) removes and returns the module at index; the rest are renumbered.
function Sequential:pop(index)
  local _, i = key_at(self, index, self:_get_name())
  local mods = self._modules:values()
  local m = table.remove(mods, i + 1)
  renumber(self, mods)
  return m
end

-- s:slice(start, stop): a Sequential of modules [start, stop) keeping their keys (s[start:stop]).
function Sequential:slice(start, stop)
  local keys = self._modules:keys()
  local n = #keys
  start = start or 0
  stop = stop or n
  if start < 0 then start = math.max(start + n, 0) end
  if stop < 0 then stop = stop + n end
  stop = math.min(stop, n)
  local pairs_ = {}
  for i = start + 1, stop do pairs_[#pairs_ + 1] = { keys[i], self._modules[keys[i]] } end
  return self.__class(OD.new(pairs_))
end

-- ---- ModuleList ----

local ModuleList = Module:extend("ModuleList")
M.ModuleList = ModuleList

function ModuleList:__init(modules)
  if modules ~= nil then self:extend(modules) end
end

function ModuleList:__getitem(idx)
  refuse_ipairs(self, idx)
  return self._modules[key_at(self, idx, "ModuleList")]
end
function ModuleList:__setitem(idx, m) self[key_at(self, idx, "ModuleList")] = m end
ModuleList.__len = count
ModuleList.__pairs = enumerate
ModuleList.enumerate = enumerate
ModuleList.ipairs = enumerate
ModuleList.append = Sequential.append
ModuleList.insert = Sequential.insert
ModuleList.pop = Sequential.pop

ModuleList.extend = extend_or_subclass(function(self, modules)
  if type(modules) ~= "table" then
    U.errorf("ModuleList.extend should be called with an iterable, but got %s", U.typename(modules))
  end
  local mods = is_module(modules) and modules:children() or modules
  for _, m in ipairs(mods) do self:append(m) end
  return self
end)

-- Repeated identical entries print once: "(0-2): 3 x Linear(...)".
function ModuleList:__tostring()
  local reprs = {}
  for _, m in pairs(self._modules) do reprs[#reprs + 1] = tostring(m) end
  if #reprs == 0 then return self:_get_name() .. "()" end
  local blocks = {}
  for i, r in ipairs(reprs) do
    local last = blocks[#blocks]
    if last and last.repr == r then last.stop = i - 1
    else blocks[#blocks + 1] = { start = i - 1, stop = i - 1, repr = r } end
  end
  local lines = {}
  for _, b in ipairs(blocks) do
    local s
    if b.start == b.stop then s = string.format("(%d): %s", b.start, b.repr)
    else s = string.format("(%d-%d): %d x %s", b.start, b.stop, b.stop - b.start + 1, b.repr) end
    lines[#lines + 1] = Module._addindent(s, 2)
  end
  return self:_get_name() .. "(\n  " .. table.concat(lines, "\n  ") .. "\n)"
end

-- ---- ModuleDict ----

local ModuleDict = Module:extend("ModuleDict")
M.ModuleDict = ModuleDict

function ModuleDict:__init(modules)
  if modules ~= nil then self:update(modules) end
end

-- update(OrderedDict | ModuleDict | {{key, module}, ...} | {key = module, ...} (keys sorted))
function ModuleDict:update(modules)
  if type(modules) ~= "table" then
    U.errorf("ModuleDict.update should be called with an iterable of key/value pairs, but got %s",
      U.typename(modules))
  end
  if OD.is(modules) or is_module(modules) then
    for k, m in pairs(is_module(modules) and modules._modules or modules) do self[k] = m end
  elseif modules[1] ~= nil then
    for i, e in ipairs(modules) do
      if type(e) ~= "table" or #e ~= 2 then
        U.errorf("ModuleDict update sequence element #%d has length %s; 2 is required", i - 1,
          type(e) == "table" and #e or "?")
      end
      self:add_module(e[1], e[2])
    end
  else
    local keys = {}
    for k in pairs(modules) do keys[#keys + 1] = k end
    table.sort(keys)
    for _, k in ipairs(keys) do self:add_module(k, modules[k]) end
  end
end

ModuleDict.__len = count
function ModuleDict:__pairs() return pairs(self._modules) end
function ModuleDict:keys() return self._modules:keys() end
function ModuleDict:values() return self._modules:values() end
function ModuleDict:items() return self._modules:items() end
function ModuleDict:contains(key) return self._modules:has(key) end

function ModuleDict:pop(key)
  local m = self._modules[key]
  self[key] = nil
  return m
end

function ModuleDict:clear()
  for _, k in ipairs(self._modules:keys()) do self[k] = nil end
end

return M
