-- functools: partial, reduce, lru_cache / cache, cmp_to_key, wraps against Python's results
local T = ...
local functools = require "functools"

T.test("partial", function()
  local function f(a, b, c, kw) return { a, b, c, kw } end
  local p = functools.partial(f, 1, 2)
  T.eq(p(3), { 1, 2, 3 }, "partial(f, 1, 2)(3)")
  local k = functools.partial(f, 1, { lr = 0.1, m = 0 })
  T.eq(k(2, 3), { 1, 2, 3, { lr = 0.1, m = 0 } }, "stored keywords go last")
  T.eq(k(2, 3, { m = 0.9 }), { 1, 2, 3, { lr = 0.1, m = 0.9 } }, "the call's keywords win")
  T.eq(k.keywords, { lr = 0.1, m = 0 }, "stored keywords unchanged")
  T.eq(p.func, f, "func")
  T.eq({ p.args[1], p.args[2], p.args.n }, { 1, 2, 2 }, "args")
  local pp = functools.partial(p, 9)
  T.eq(pp.func, f, "a partial of a partial is flattened")
  T.eq(pp(), { 1, 2, 9 }, "flattened call")
  local base2 = functools.partial(tonumber, { base = 2 })
  T.eq(base2.keywords.base, 2, "keywords only")
  T.eq(functools.partial(math.max, 5)(3, 8), 8, "a C function")
  local mul = functools.partial(function(a, b) return a * b end, nil)
  T.eq(mul.args.n, 1, "a nil argument is kept")
  T.eq(tostring(functools.partial(f, 1, "a", { x = true })):match("%(.-, (.*)%)"), "1, 'a', x=True", "repr")
  T.raises(function() functools.partial(3) end, "the first argument must be callable")
end)

T.test("reduce", function()
  local add = function(a, b) return a + b end
  T.eq(functools.reduce(add, { 1, 2, 3, 4, 5 }), 15, "((((1+2)+3)+4)+5)")
  T.eq(functools.reduce(function(a, b) return a .. b end, "abc", "x"), "xabc", "initial goes first")
  T.eq(functools.reduce(add, {}, 0), 0, "empty with initial")
  T.eq(functools.reduce(add, { 7 }), 7, "one item")
  T.eq(functools.reduce(function(a, b) return a - b end, { 10, 1, 2 }), 7, "left fold: (10-1)-2")
  T.raises(function() functools.reduce(add, {}) end, "reduce() of empty iterable with no initial value")
  local x = functools.reduce(function(a, b) return a * b end, { torch.tensor(2.0), torch.tensor(3.0) })
  T.eq(x:item(), 6.0, "tensors")
end)

T.test("lru_cache", function()
  local calls = 0
  local fib
  fib = functools.lru_cache(function(n)
    calls = calls + 1
    if n < 2 then return n end
    return fib(n - 1) + fib(n - 2)
  end)
  T.eq(fib(30), 832040, "fib(30)")
  T.eq(calls, 31, "each n computed once")
  -- Python: fib.cache_info() after fib(30) -> CacheInfo(hits=28, misses=31, maxsize=128, currsize=31)
  T.eq(tostring(fib.cache_info()), "CacheInfo(hits=28, misses=31, maxsize=128, currsize=31)", "cache_info")
  T.eq(fib:cache_info().hits, 28, "cache_info with :")
  fib.cache_clear()
  T.eq(tostring(fib.cache_info()), "CacheInfo(hits=0, misses=0, maxsize=128, currsize=0)", "cache_clear")

  -- LRU order: maxsize 2, a use refreshes an entry
  local seen = {}
  local sq = functools.lru_cache(2)(function(x) seen[#seen + 1] = x; return x * x end)
  sq(1); sq(2); sq(1); sq(3) -- 2 is the least recent: evicted
  sq(1); sq(2)
  T.eq(seen, { 1, 2, 3, 2 }, "least recently used evicted")
  T.eq(tostring(sq.cache_info()), "CacheInfo(hits=2, misses=4, maxsize=2, currsize=2)", "LRU counts")

  -- keys: 1 and 1.0 are one key unless typed; keyword tables by their contents
  local n = 0
  local g = functools.lru_cache({ maxsize = 8 })(function() n = n + 1; return n end)
  T.eq({ g(1), g(1.0), g("1"), g(1, { k = 2 }), g(1, { k = 2 }), g(1, { k = 3 }) }, { 1, 1, 2, 3, 3, 4 }, "keys")
  local t = {}
  T.eq({ g(t), g(t), g({}) }, { 5, 5, 6 }, "other tables by identity")
  T.eq({ g(nil), g(nil, nil), g() }, { 7, 8, 9 }, "nil arguments count")
  local m = 0
  local typed = functools.lru_cache(nil, { typed = true })(function() m = m + 1; return m end)
  T.eq({ typed(1), typed(1.0), typed(1) }, { 1, 2, 1 }, "typed: int and float differ")
  T.eq(typed.cache_info().maxsize, nil, "lru_cache(nil) is maxsize=None")

  local z = 0
  local none = functools.lru_cache(0)(function() z = z + 1; return z end)
  T.eq({ none(1), none(1) }, { 1, 2 }, "maxsize 0 caches nothing")
  T.eq(tostring(none.cache_info()), "CacheInfo(hits=0, misses=2, maxsize=0, currsize=0)", "maxsize 0 info")

  local multi = functools.cache(function(a) return a, a + 1 end)
  local a1, b1 = multi(1)
  local a2, b2 = multi(1)
  T.eq({ a1, b1, a2, b2 }, { 1, 2, 1, 2 }, "several results kept")
  T.eq(tostring(multi.cache_info()), "CacheInfo(hits=1, misses=1, maxsize=None, currsize=1)", "cache")
  T.raises(function() functools.lru_cache("x") end, "Expected first argument to be an integer, a callable, or None")
  T.raises(function() functools.lru_cache({ size = 3 }) end, "bad argument #1 to 'lru_cache' (unknown keyword 'size')")
end)

T.test("cmp_to_key wraps", function()
  local function cmp(a, b) return (a % 10) - (b % 10) end -- by last digit
  local key = functools.cmp_to_key(cmp)
  local ks = {}
  for i, v in ipairs({ 23, 11, 45, 32 }) do ks[i] = key(v) end
  table.sort(ks)
  local out = {}
  for i, k in ipairs(ks) do out[i] = k.obj end
  T.eq(out, { 11, 32, 23, 45 }, "sorted(l, key=cmp_to_key(cmp))")
  T.check(key(13) == key(3), "== through cmp")
  T.check(key(13) <= key(3) and not (key(13) < key(3)), "<= and <")

  local function inner() return 1 end
  local wrapper = function() return inner() end
  T.eq(functools.wraps(inner)(wrapper), wrapper, "wraps returns the wrapper")
  local obj = setmetatable({}, { __call = function() return 2 end })
  local src = { __name = "src", __doc = "doc" }
  local w = functools.wraps(src)(obj)
  T.eq({ w.__name, w.__doc, w.__wrapped__ }, { "src", "doc", src }, "a callable table gets the attributes")
end)

local function device_checks(dev)
  local n = 0
  local f = functools.lru_cache(function(x) n = n + 1; return x * 2 end)
  local x = torch.ones(3, { device = dev })
  T.eq(f(x):sum():item(), 6.0, "lru_cache on " .. dev)
  f(x)
  T.eq(n, 1, "a " .. dev .. " tensor is one key by identity")
  local s = functools.reduce(function(a, b) return a + b end, { x, x, x })
  T.eq(s:tolist(), { 3.0, 3.0, 3.0 }, "reduce of " .. dev .. " tensors")
end

device_checks("cpu")
if torch.cuda.is_available() then
  T.test("cuda", function() device_checks("cuda") end)
else
  T.skip("no CUDA", 3)
end
