-- functools: Python's functools for nnrepl (`import functools` -> `local functools = require "functools"`).
--   functools.partial(f, 1, {k = v}) -> a callable: p(2) is f(1, 2, {k = v}); keyword tables of
--     the partial and of the call merge (the call's win); p.func, p.args, p.keywords.
--   functools.reduce(f, iterable[, initial]).
--   functools.lru_cache(maxsize=128)(f), functools.lru_cache(f), functools.cache(f): a callable
--     with cache_info() (a CacheInfo(hits=, misses=, maxsize=, currsize=) namedtuple) and
--     cache_clear(). lru_cache(nil) is maxsize=None (unbounded). Arguments are the key as Python
--     hashes them: numbers by value (1 and 1.0 are one key unless {typed = true}), strings by
--     value, a trailing keyword table (not empty) by its contents, other tables, tensors and functions by identity.
--   functools.cmp_to_key(cmp): a key function whose results compare with < as cmp orders them.
--   functools.wraps(wrapped)(wrapper): returns wrapper (a Lua function has no attributes to copy;
--     a callable table gets __wrapped__ and wrapped's __name / __doc).
local U = require "nn_util"
local itertools = require "itertools"
local collections = require "collections"

local M = {}

-- ---- partial ----

local function merged_call(p, ...)
  local args = table.pack(...)
  local call_kw
  if args.n > 0 and U.is_opts(args[args.n]) then
    call_kw = args[args.n]
    args.n = args.n - 1
  end
  local all = table.move(p.args, 1, p.args.n, 1, {})
  table.move(args, 1, args.n, p.args.n + 1, all)
  local n = p.args.n + args.n
  local kw = p.keywords
  if call_kw then
    kw = {}
    for k, v in pairs(p.keywords) do kw[k] = v end
    for k, v in pairs(call_kw) do kw[k] = v end
  end
  if next(kw) ~= nil then
    n = n + 1
    all[n] = kw
  end
  return p.func(table.unpack(all, 1, n))
end

local partial_mt = {
  __name = "functools.partial",
  __call = merged_call,
  __tostring = function(p)
    local parts = { tostring(p.func) }
    for i = 1, p.args.n do parts[#parts + 1] = U.pyrepr(p.args[i]) end
    local keys = {}
    for k in pairs(p.keywords) do keys[#keys + 1] = k end
    table.sort(keys)
    for _, k in ipairs(keys) do parts[#parts + 1] = k .. "=" .. U.pyrepr(p.keywords[k]) end
    return "functools.partial(" .. table.concat(parts, ", ") .. ")"
  end,
}

local function callable(f)
  return type(f) == "function" or (getmetatable(f) or {}).__call ~= nil
end

-- partial(func, *args, **keywords)
function M.partial(func, ...)
  if not callable(func) then U.error("the first argument must be callable") end
  local args = table.pack(...)
  local kw = {}
  if args.n > 0 and U.is_opts(args[args.n]) then
    kw = args[args.n]
    args[args.n] = nil
    args.n = args.n - 1
  end
  if getmetatable(func) == partial_mt then -- flattened, as Python does
    local inner = func
    local all = table.move(inner.args, 1, inner.args.n, 1, {})
    table.move(args, 1, args.n, inner.args.n + 1, all)
    all.n = inner.args.n + args.n
    local keywords = {}
    for k, v in pairs(inner.keywords) do keywords[k] = v end
    for k, v in pairs(kw) do keywords[k] = v end
    return setmetatable({ func = inner.func, args = all, keywords = keywords }, partial_mt)
  end
  return setmetatable({ func = func, args = args, keywords = kw }, partial_mt)
end

-- ---- reduce ----

-- reduce(function, iterable[, initial]): function(function(initial, x1), x2) ...
function M.reduce(fn, iterable, ...)
  local it = itertools.iter(iterable, "reduce")
  local acc
  if select("#", ...) > 0 then
    acc = ...
  else
    acc = it()
    if acc == nil then U.error("reduce() of empty iterable with no initial value") end
  end
  for v in it do acc = fn(acc, v) end
  return acc
end

-- ---- lru_cache ----

M.CacheInfo = collections.namedtuple("CacheInfo", { "hits", "misses", "maxsize", "currsize" })

local ids = setmetatable({}, { __mode = "k" }) -- identity keys: one number per object, never reused
local next_id = 0

local function key_part(v, typed, out)
  local t = type(v)
  if v == nil then
    out[#out + 1] = "N"
  elseif t == "number" then
    if v ~= v then
      out[#out + 1] = "nan" -- Python hashes a NaN by identity; one key for them all here
    else
      local iv = not typed and math.tointeger(v)
      if iv then out[#out + 1] = "i" .. iv
      else out[#out + 1] = (math.type(v) == "integer" and "i" or "f") .. string.format("%.17g", v) end
    end
  elseif t == "string" then
    out[#out + 1] = "s" .. #v .. ":" .. v
  elseif t == "boolean" then
    out[#out + 1] = v and "T" or "F"
  else
    local id = ids[v]
    if not id then
      next_id = next_id + 1
      id = next_id
      ids[v] = id
    end
    out[#out + 1] = "o" .. id
  end
end

local function make_key(typed, ...)
  local n, out = select("#", ...), {}
  for i = 1, n do
    local v = select(i, ...)
    if i == n and U.is_opts(v) and next(v) ~= nil then -- keywords by their contents, in sorted key order
      local keys = {}
      for k in pairs(v) do keys[#keys + 1] = tostring(k) end
      table.sort(keys)
      out[#out + 1] = "kw"
      for _, k in ipairs(keys) do
        out[#out + 1] = "s" .. #k .. ":" .. k
        key_part(v[k], typed, out)
      end
    else
      key_part(v, typed, out)
    end
  end
  return table.concat(out, "\0")
end

local cached_mt = {
  __name = "functools._lru_cache_wrapper",
  __call = function(self, ...) return self.__call_cached(...) end,
  __tostring = function(self) return "<functools._lru_cache_wrapper " .. tostring(self.__wrapped__) .. ">" end,
}

local function wrap_cached(fn, maxsize, typed)
  if not callable(fn) then U.error("Expected first argument to be an integer, a callable, or None") end
  local entries, count, hits, misses = {}, 0, 0, 0
  -- a doubly linked list, most recent first: head <-> ... <-> tail
  local head, tail
  local function unlink(e)
    if e.prev then e.prev.next = e.next else head = e.next end
    if e.next then e.next.prev = e.prev else tail = e.prev end
    e.prev, e.next = nil, nil
  end
  local function push_front(e)
    e.next = head
    if head then head.prev = e end
    head = e
    if not tail then tail = e end
  end
  local self = setmetatable({ __wrapped__ = fn }, cached_mt)
  self.__call_cached = function(...)
    local key = make_key(typed, ...)
    local e = entries[key]
    if e then
      hits = hits + 1
      unlink(e)
      push_front(e)
      return table.unpack(e.result, 1, e.result.n)
    end
    misses = misses + 1
    local result = table.pack(fn(...))
    if maxsize == nil or maxsize > 0 then
      if entries[key] == nil then -- fn may have cached this key itself (recursion)
        e = { key = key, result = result }
        entries[key] = e
        push_front(e)
        count = count + 1
        if maxsize and count > maxsize then
          local old = tail
          unlink(old)
          entries[old.key] = nil
          count = count - 1
        end
      end
    end
    return table.unpack(result, 1, result.n)
  end
  function self.cache_info()
    return M.CacheInfo(hits, misses, maxsize, count)
  end
  function self.cache_clear()
    entries, count, hits, misses, head, tail = {}, 0, 0, 0, nil, nil
  end
  self.cache_parameters = function() return { maxsize = maxsize, typed = typed } end
  return self
end

-- lru_cache(maxsize=128, typed=False) -> a decorator; lru_cache(f) -> f cached with maxsize 128
function M.lru_cache(...)
  local n, first = select("#", ...), ...
  if n >= 1 and callable(first) then return wrap_cached(first, 128, false) end
  local a = U.parse("lru_cache", { { "maxsize", 128 }, { "typed", false } }, ...)
  if n >= 1 and first == nil then a.maxsize = nil end -- lru_cache(nil): maxsize=None
  local maxsize = a.maxsize
  if maxsize ~= nil then
    if math.type(maxsize) ~= "integer" then U.error("Expected first argument to be an integer, a callable, or None") end
    maxsize = math.max(maxsize, 0)
  end
  return function(fn) return wrap_cached(fn, maxsize, a.typed and true or false) end
end

-- cache(f): lru_cache(maxsize=None)(f)
function M.cache(fn) return wrap_cached(fn, nil, false) end

-- ---- cmp_to_key ----

-- cmp_to_key(cmp): key(x) is an object with .obj whose <, <=, == follow cmp(a, b) < 0, <= 0, == 0
function M.cmp_to_key(cmp)
  local mt = { __name = "functools.KeyWrapper" }
  mt.__lt = function(a, b) return cmp(a.obj, b.obj) < 0 end
  mt.__le = function(a, b) return cmp(a.obj, b.obj) <= 0 end
  mt.__eq = function(a, b) return cmp(a.obj, b.obj) == 0 end
  return function(x) return setmetatable({ obj = x }, mt) end
end

-- ---- wraps ----

-- update_wrapper(wrapper, wrapped): what Lua can hold (a callable table's fields); returns wrapper
function M.update_wrapper(wrapper, wrapped)
  if type(wrapper) == "table" then
    if type(wrapped) == "table" then
      for _, k in ipairs({ "__name", "__doc", "__module", "__qualname" }) do
        if rawget(wrapped, k) ~= nil then rawset(wrapper, k, rawget(wrapped, k)) end
      end
    end
    rawset(wrapper, "__wrapped__", wrapped)
  end
  return wrapper
end

function M.wraps(wrapped)
  return function(wrapper) return M.update_wrapper(wrapper, wrapped) end
end

return M
