-- collections: Python's collections for nnrepl (`from collections import deque` ->
-- `local collections = require "collections"; local deque = collections.deque`).
--
-- Counter, defaultdict and OrderedDict keep insertion order: pairs(), :keys(), :values(),
-- :items() follow it, # counts the entries, d[k] = nil deletes. Their methods are found through
-- the same table as the entries, so a key named like a method (keys, update, ...) hides it
-- while present, and a missing one reads as the method: use d:get(k, default) for such keys
-- (and for keys that start with "__", which read as nil when missing).
--   Counter(iterable or mapping): c[k] is 0 when missing; most_common(n) (ties in first-seen
--   order, a list of {k, n} that `for k, n in c:most_common(3) do` walks), update, subtract,
--   elements (an iterator), total, c + d and c - d (positive counts only), tostring as Python.
--   defaultdict(factory): a missing key is set to factory() when read (Python's
--   defaultdict(int) / defaultdict(list) are defaultdict(function() return 0 end) /
--   defaultdict(function() return {} end)).
--   OrderedDict: nn's (a state_dict is one) with move_to_end(k, last) and popitem(last).
-- deque(iterable, maxlen): indexes 1-based like a Lua list (d[1] is Python's d[0]); negative
--   indices count from the end as in Python (d[-1] is the last); reading outside gives nil (so
--   ipairs works), writing outside is an error. # is len(d).
-- namedtuple("Name", {"a", "b"}) (or "a b" / "a, b"; {defaults = {...}} for the last fields):
--   a class; Name(1, 2) or Name{a = 1, b = 2}; p.a and p[1]; p._fields, p:_asdict() (an
--   OrderedDict), p:_replace{b = 3}, Name._make(list); immutable; prints Name(a=1, b=2).
local U = require "nn_util"
local itertools = require "itertools"

local M = {}
local iter = itertools.iter
local od_methods = getmetatable(U.OrderedDict.new()).__index

-- a Lua table as a mapping (plain table with a string key, or a dict object) or nil
local function as_mapping(v)
  if type(v) ~= "table" then return nil end
  local mt = getmetatable(v)
  if mt and (mt.__name == "OrderedDict" or mt.__name == "Counter" or mt.__name == "defaultdict") then return v end
  if mt == nil and rawget(v, 1) == nil and next(v) ~= nil then
    -- a plain Lua table has no order: its keys are taken sorted, for a repeatable result
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys, function(a, b)
      if type(a) == type(b) and (type(a) == "number" or type(a) == "string") then return a < b end
      return type(a) < type(b)
    end)
    local od = U.OrderedDict.new()
    for _, k in ipairs(keys) do od[k] = v[k] end
    return od
  end
end

-- a new ordered dict whose metatable takes name, the methods and a reader for missing keys
local function new_dict(name, methods, missing, tostr)
  local d = U.OrderedDict.new()
  local mt = getmetatable(d)
  mt.__name = name
  mt.__tostring = tostr
  mt.__index = function(t, k)
    local m = methods[k] or od_methods[k]
    if m ~= nil then return m end
    if type(k) == "string" and k:sub(1, 2) == "__" then return nil end -- Lua's own probes (__name, __class)
    return missing(t, k)
  end
  return d, mt
end

local function get(t, k, default)
  local v = rawget(t, k)
  if v == nil then return default end
  return v
end

-- ---- Counter ----

local Counter = {}
local counter_methods = { get = get }

local function counter_tostring(c)
  local parts = {}
  for _, kv in ipairs(c:most_common()) do parts[#parts + 1] = U.pyrepr(kv[1]) .. ": " .. U.pyrepr(kv[2]) end
  if #parts == 0 then return "Counter()" end
  return "Counter({" .. table.concat(parts, ", ") .. "})"
end

local function is_counter(v)
  local mt = getmetatable(v)
  return type(v) == "table" and mt ~= nil and mt.__name == "Counter"
end

-- add sign * the counts of an iterable (each item once) or a mapping (its values)
local function add_counts(c, source, sign, fname)
  if source == nil then return end
  local map = as_mapping(source)
  if map then
    for k, n in pairs(map) do c[k] = get(c, k, 0) + sign * n end
  else
    for k in iter(source, fname) do c[k] = get(c, k, 0) + sign end
  end
end

function counter_methods.update(c, source) add_counts(c, source, 1, "update") end
function counter_methods.subtract(c, source) add_counts(c, source, -1, "subtract") end

function counter_methods.total(c)
  local s = 0
  for _, n in pairs(c) do s = s + n end
  return s
end

-- {k, n} pairs by count, largest first; equal counts keep first-seen order
function counter_methods.most_common(c, n)
  local items, pos = {}, {}
  for k, v in pairs(c) do
    items[#items + 1] = { k, v }
    pos[k] = #items
  end
  table.sort(items, function(a, b)
    if a[2] ~= b[2] then return a[2] > b[2] end
    return pos[a[1]] < pos[b[1]]
  end)
  if n ~= nil then
    n = U.check_int("most_common", "n", n)
    for i = #items, math.max(n, 0) + 1, -1 do items[i] = nil end
  end
  return U.named_list(items)
end

-- an iterator over the keys, each repeated its count times (counts below 1 skipped)
function counter_methods.elements(c)
  local keys, counts = {}, {}
  for k, n in pairs(c) do
    keys[#keys + 1] = k
    counts[#counts + 1] = n
  end
  local i, left = 1, counts[1] or 0
  return function()
    while i <= #keys and left < 1 do
      i = i + 1
      left = counts[i] or 0
    end
    if i > #keys then return nil end
    left = left - 1
    return keys[i]
  end
end

function counter_methods.copy(c)
  local out = Counter.new()
  for k, n in pairs(c) do out[k] = n end
  return out
end

local function combine(a, b, sign)
  if not is_counter(a) or not is_counter(b) then
    local function name(v) return is_counter(v) and "Counter" or U.typename(v) end
    U.errorf("unsupported operand type(s) for %s: '%s' and '%s'", sign > 0 and "+" or "-", name(a), name(b))
  end
  local out = Counter.new()
  for k, n in pairs(a) do
    local v = n + sign * get(b, k, 0)
    if v > 0 then out[k] = v end
  end
  for k, n in pairs(b) do
    if not a:has(k) and sign * n > 0 then out[k] = sign * n end
  end
  return out
end

local function counter_eq(a, b)
  for k, n in pairs(a) do if n ~= get(b, k, 0) then return false end end
  for k, n in pairs(b) do if n ~= get(a, k, 0) then return false end end
  return true
end

-- Counter(iterable or mapping)
function Counter.new(source)
  local c, mt = new_dict("Counter", counter_methods, function() return 0 end, counter_tostring)
  mt.__add = function(a, b) return combine(a, b, 1) end
  mt.__sub = function(a, b) return combine(a, b, -1) end
  mt.__eq = counter_eq
  add_counts(c, source, 1, "Counter")
  return c
end
M.Counter = Counter.new

-- ---- defaultdict ----

local function repr_value(v)
  if type(v) == "table" and getmetatable(v) == nil then
    local parts = {}
    for i = 1, #v do parts[i] = repr_value(v[i]) end
    return "[" .. table.concat(parts, ", ") .. "]"
  end
  return U.pyrepr(v)
end

local function dd_tostring(d)
  local parts = {}
  for k, v in pairs(d) do parts[#parts + 1] = U.pyrepr(k) .. ": " .. repr_value(v) end
  return "defaultdict(" .. tostring(getmetatable(d).default_factory) .. ", {" .. table.concat(parts, ", ") .. "})"
end

-- defaultdict(default_factory, mapping=nil): factory nil makes a missing key an error
function M.defaultdict(factory, init)
  if factory ~= nil and type(factory) ~= "function" and not (getmetatable(factory) or {}).__call then
    U.error("first argument must be callable or None")
  end
  local d, mt = new_dict("defaultdict", { get = get }, function(t, k)
    if k == "default_factory" then return getmetatable(t).default_factory end
    local f = getmetatable(t).default_factory
    if f == nil then U.error(U.pyrepr(k)) end -- Python's KeyError: 'k'
    local v = f()
    od_methods.set(t, k, v)
    return v
  end, dd_tostring)
  mt.default_factory = factory
  local map = as_mapping(init)
  if map then for k, v in pairs(map) do d[k] = v end end
  return d
end

-- ---- OrderedDict ----

M.OrderedDict = U.OrderedDict.new

-- ---- deque ----

local deque_methods = {}
local deque_mt = { __name = "deque" }

local function check_index(d, i)
  if math.type(i) ~= "integer" then
    U.errorf("sequence index must be integer, not '%s'", U.typename(i))
  end
  local n = d._hi - d._lo + 1
  if i < 0 then i = n + i + 1 end
  if i < 1 or i > n then return nil end
  return d._lo + i - 1
end

deque_mt.__index = function(d, k)
  if type(k) == "number" then
    local at = check_index(d, k)
    return at and d._data[at]
  end
  return deque_methods[k]
end

deque_mt.__newindex = function(d, k, v)
  if type(k) ~= "number" then U.errorf("'deque' object has no attribute '%s'", tostring(k)) end
  local at = check_index(d, k)
  if not at then U.error("deque index out of range") end
  d._data[at] = v
end

deque_mt.__len = function(d) return d._hi - d._lo + 1 end

deque_mt.__pairs = function(d)
  local i = 0
  return function()
    i = i + 1
    if i <= #d then return i, d[i] end
  end, d, nil
end

deque_mt.__tostring = function(d)
  local parts = {}
  for i = 1, #d do parts[i] = repr_value(d[i]) end
  local s = "deque([" .. table.concat(parts, ", ") .. "]"
  if d.maxlen then s = s .. ", maxlen=" .. d.maxlen end
  return s .. ")"
end

deque_mt.__eq = function(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do if a[i] ~= b[i] then return false end end
  return true
end

function deque_methods.append(d, v)
  if d.maxlen == 0 then return end
  d._hi = d._hi + 1
  d._data[d._hi] = v
  if #d > (d.maxlen or math.huge) then deque_methods.popleft(d) end
end

function deque_methods.appendleft(d, v)
  if d.maxlen == 0 then return end
  d._lo = d._lo - 1
  d._data[d._lo] = v
  if #d > (d.maxlen or math.huge) then deque_methods.pop(d) end
end

function deque_methods.pop(d)
  if #d == 0 then U.error("pop from an empty deque") end
  local v = d._data[d._hi]
  d._data[d._hi] = nil
  d._hi = d._hi - 1
  return v
end

function deque_methods.popleft(d)
  if #d == 0 then U.error("pop from an empty deque") end
  local v = d._data[d._lo]
  d._data[d._lo] = nil
  d._lo = d._lo + 1
  return v
end

function deque_methods.extend(d, iterable)
  local items = itertools.list(iterable) -- read first: d:extend(d) works
  for _, v in ipairs(items) do deque_methods.append(d, v) end
end

-- each item goes to the left in turn, so they end up reversed
function deque_methods.extendleft(d, iterable)
  local items = itertools.list(iterable)
  for _, v in ipairs(items) do deque_methods.appendleft(d, v) end
end

-- rotate(n=1): n steps to the right (the last item becomes the first); negative: to the left
function deque_methods.rotate(d, n)
  n = U.check_int("rotate", "n", n or 1)
  local len = #d
  if len <= 1 then return end
  n = n % len
  if n > len // 2 then
    for _ = 1, len - n do
      local v = deque_methods.popleft(d)
      d._hi = d._hi + 1
      d._data[d._hi] = v
    end
  else
    for _ = 1, n do
      local v = deque_methods.pop(d)
      d._lo = d._lo - 1
      d._data[d._lo] = v
    end
  end
end

function deque_methods.clear(d)
  d._data, d._lo, d._hi = {}, 1, 0
end

function deque_methods.count(d, x)
  local n = 0
  for i = 1, #d do if d[i] == x then n = n + 1 end end
  return n
end

-- remove(x): drop the first item equal to x
function deque_methods.remove(d, x)
  local items = itertools.list(d)
  for i = 1, #items do
    if items[i] == x then
      table.remove(items, i)
      deque_methods.clear(d)
      for _, v in ipairs(items) do deque_methods.append(d, v) end
      return
    end
  end
  U.error("deque.remove(x): x not in deque")
end

function deque_methods.reverse(d)
  local i, j = d._lo, d._hi
  while i < j do
    d._data[i], d._data[j] = d._data[j], d._data[i]
    i, j = i + 1, j - 1
  end
end

function deque_methods.copy(d) return M.deque(d, d.maxlen) end

-- deque(iterable=(), maxlen=None)
function M.deque(...)
  local a = U.parse("deque", { { "iterable", nil }, { "maxlen", nil } }, ...)
  local maxlen = a.maxlen
  if maxlen ~= nil then
    maxlen = U.check_int("deque", "maxlen", maxlen)
    if maxlen < 0 then U.error("maxlen must be non-negative") end
  end
  local d = { _data = {}, _lo = 1, _hi = 0, maxlen = maxlen }
  setmetatable(d, deque_mt)
  if a.iterable ~= nil then deque_methods.extend(d, a.iterable) end
  return d
end

-- ---- namedtuple ----

local VALUES = {} -- the private key of an instance's values

local function field_list(fields)
  if type(fields) == "string" then
    local out = {}
    for name in fields:gsub(",", " "):gmatch("%S+") do out[#out + 1] = name end
    return out
  end
  return itertools.list(fields)
end

local function check_name(name, what)
  if type(name) ~= "string" or not name:match("^[%a_][%w_]*$") then
    U.errorf("Type names and field names must be valid identifiers: %s", U.pyrepr(tostring(name)))
  end
  if what == "field" and name:sub(1, 1) == "_" then
    U.errorf("Field names cannot start with an underscore: %s", U.pyrepr(name))
  end
end

-- namedtuple(typename, field_names, {defaults = list}): the class
function M.namedtuple(typename, field_names, opts)
  opts = U.parse("namedtuple", { { "defaults", nil }, { "rename", false }, { "module", nil } }, opts or {})
  check_name(typename, "type")
  local fields, index = field_list(field_names), {}
  for i, f in ipairs(fields) do
    check_name(f, "field")
    if index[f] then U.errorf("Encountered duplicate field name: %s", U.pyrepr(f)) end
    index[f] = i
  end
  local n = #fields
  local defaults = opts.defaults and itertools.list(opts.defaults) or {}
  if #defaults > n then U.error("Got more default values than field names") end
  local field_defaults = {}
  for j, v in ipairs(defaults) do field_defaults[fields[n - #defaults + j]] = v end

  local cls, methods, mt = { _fields = fields, _field_defaults = field_defaults, __name = typename }, {}, {}
  mt.__name = typename
  mt.__index = function(p, k)
    local i = index[k] or (math.type(k) == "integer" and k >= 1 and k <= n and k)
    if i then return p[VALUES][i] end
    if math.type(k) == "integer" and k < 0 and k >= -n then return p[VALUES][n + k + 1] end
    return methods[k]
  end
  mt.__newindex = function(_, k)
    U.errorf("can't set attribute %s of %s (a namedtuple is immutable: use p:_replace{...})", tostring(k), typename)
  end
  mt.__len = function() return n end
  mt.__pairs = function(p)
    local i = 0
    return function()
      i = i + 1
      if i <= n then return i, p[VALUES][i] end
    end, p, nil
  end
  mt.__tostring = function(p)
    local parts = {}
    for i, f in ipairs(fields) do parts[i] = f .. "=" .. repr_value(p[VALUES][i]) end
    return typename .. "(" .. table.concat(parts, ", ") .. ")"
  end
  mt.__eq = function(a, b)
    if #a ~= #b then return false end
    for i = 1, n do if a[i] ~= b[i] then return false end end
    return true
  end
  mt.__lt = function(a, b) -- tuples compare item by item
    for i = 1, math.min(#a, #b) do
      if a[i] ~= b[i] then return a[i] < b[i] end
    end
    return #a < #b
  end
  mt.__le = function(a, b) return a == b or a < b end

  local function new(...)
    local args = table.pack(...)
    local kw = {}
    if args.n > 0 and U.is_opts(args[args.n]) and (args.n > 1 or n ~= 1 or next(args[args.n]) ~= nil) then
      kw = args[args.n]
      args.n = args.n - 1
    end
    if args.n > n then
      U.errorf("%s() takes %d positional arguments but %d were given", typename, n, args.n)
    end
    local vals, given = {}, {}
    for i = 1, args.n do vals[i] = args[i]; given[i] = true end
    for k, v in pairs(kw) do
      local i = index[k]
      if not i then U.errorf("%s() got an unexpected keyword argument %s", typename, U.pyrepr(tostring(k))) end
      if given[i] then U.errorf("%s() got multiple values for argument %s", typename, U.pyrepr(k)) end
      vals[i], given[i] = v, true
    end
    local missing = {}
    for i, f in ipairs(fields) do
      if not given[i] then
        if field_defaults[f] ~= nil then vals[i] = field_defaults[f] else missing[#missing + 1] = U.pyrepr(f) end
      end
    end
    if #missing > 0 then
      U.errorf("%s() missing %d required positional argument%s: %s", typename, #missing,
        #missing > 1 and "s" or "", table.concat(missing, " and "))
    end
    return setmetatable({ [VALUES] = vals }, mt)
  end

  methods._fields = fields
  methods._field_defaults = field_defaults
  function methods._asdict(p)
    local od = U.OrderedDict.new()
    for i, f in ipairs(fields) do od:set(f, p[VALUES][i]) end
    return od
  end
  function methods._replace(p, changes)
    local vals = table.move(p[VALUES], 1, n, 1, {})
    local bad = {}
    for k, v in pairs(changes or {}) do
      if index[k] then vals[index[k]] = v else bad[#bad + 1] = U.pyrepr(tostring(k)) end
    end
    if #bad > 0 then U.errorf("Got unexpected field names: [%s]", table.concat(bad, ", ")) end
    return setmetatable({ [VALUES] = vals }, mt)
  end
  function cls._make(iterable)
    local vals = itertools.list(iterable)
    if #vals ~= n then U.errorf("Expected %d arguments, got %d", n, #vals) end
    return new(table.unpack(vals, 1, n))
  end
  return setmetatable(cls, {
    __call = function(_, ...) return new(...) end,
    __tostring = function() return "<class '" .. typename .. "'>" end,
  })
end

return M
