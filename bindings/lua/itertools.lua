-- itertools: Python's itertools for nnrepl (`import itertools` -> `local itertools = require "itertools"`).
-- Every function returns a Lua iterator (a closure) for a generic `for`, giving Python's values in
-- Python's order: `for x in itertools.islice(itertools.count(10, 2), 3) do` -> 10, 12, 14.
-- Functions whose Python items are tuples (product, permutations, combinations*, zip_longest,
-- pairwise, batched) give a Lua list per item: `for p in itertools.product("ab", {1, 2}) do
-- local c, n = p[1], p[2]`. groupby gives two values, the key and an iterator over its group.
-- An iterable is a Lua list (also a deque or namedtuple), a string (its UTF-8 characters), a
-- tensor (its rows, x[0], x[1], ...), an OrderedDict / Counter / defaultdict (its keys in
-- order) or an iterator function (what these functions return, io.lines, string.gmatch).
-- A Lua loop ends at the first nil, so Python's None cannot be an item here (tuple slots can).
-- `repeat` is a Lua keyword: write itertools["repeat"](x, n) or itertools.repeat_(x, n);
-- product's repeat= is `{["repeat"] = 2}`. itertools.list(it) stands for Python's list(it).
local torch = require "torch"
local U = require "nn_util"

local M = {}

local dict_kinds = { OrderedDict = true, Counter = true, defaultdict = true }

-- an iterator function over the items of an iterable (see above)
local function iter(x, fname)
  local t = type(x)
  if t == "function" then return x end
  if t == "string" then return x:gmatch(utf8.charpattern) end
  if torch.is_tensor(x) then
    if x:dim() == 0 then U.error("iteration over a 0-d tensor") end
    local i, n = -1, x:size(0)
    return function()
      i = i + 1
      if i < n then return x[i] end
    end
  end
  if t == "table" then
    local mt = getmetatable(x)
    if mt and dict_kinds[mt.__name] then
      local keys = {}
      for k in pairs(x) do keys[#keys + 1] = k end
      x = keys
    elseif mt and mt.__call and not mt.__len and not mt.__index then
      return x -- a callable object used as an iterator
    end
    local i = 0
    return function()
      i = i + 1
      if i <= #x then return x[i] end
    end
  end
  U.errorf("%s'%s' object is not iterable", fname and (fname .. ": ") or "", U.typename(x))
end
M.iter = iter

-- Python's list(iterable): a Lua list of its items
function M.list(iterable)
  local out = {}
  for v in iter(iterable, "list") do out[#out + 1] = v end
  return out
end

-- a trailing keyword table (a plain table with a string key): an empty {} stays an iterable
local function kw_table(v)
  return type(v) == "table" and getmetatable(v) == nil and rawget(v, 1) == nil and next(v) ~= nil
end

local function pop_kw(fname, allowed, ...)
  local args = table.pack(...)
  local kw = {}
  if args.n > 0 and kw_table(args[args.n]) then
    kw = args[args.n]
    args[args.n] = nil
    args.n = args.n - 1
    for k in pairs(kw) do
      if not allowed[k] then U.errorf("%s: unknown keyword '%s'", fname, tostring(k)) end
    end
  end
  return args, kw
end

local function check_r(fname, r)
  if r == nil then return nil end
  r = U.check_int(fname, "r", r)
  if r < 0 then U.errorf("%s: r must be non-negative", fname) end
  return r
end

-- ---- infinite iterators ----

-- count(start=0, step=1): start, start+step, ... (repeated addition, as CPython)
function M.count(...)
  local a = U.parse("count", { { "start", 0 }, { "step", 1 } }, ...)
  local v, step, first = a.start, a.step, true
  return function()
    if first then first = false else v = v + step end
    return v
  end
end

-- cycle(iterable): its items again and again (nothing when it is empty)
function M.cycle(iterable)
  local it, saved, i, done = iter(iterable, "cycle"), {}, 0, false
  return function()
    if not done then
      local v = it()
      if v ~= nil then saved[#saved + 1] = v; return v end
      done = true
    end
    if #saved == 0 then return nil end
    i = i % #saved + 1
    return saved[i]
  end
end

-- repeat(object, times=None): object times times, or forever
local function repeat_(...)
  local a = U.parse("repeat", { { "object", U.REQUIRED }, { "times", nil } }, ...)
  local obj, left = a.object, a.times and U.check_int("repeat", "times", a.times)
  return function()
    if left then
      if left <= 0 then return nil end
      left = left - 1
    end
    return obj
  end
end
M["repeat"] = repeat_
M.repeat_ = repeat_

-- ---- iterators over one or more inputs ----

local function from_iterable(iterables)
  local outer, inner = iter(iterables, "chain.from_iterable"), nil
  return function()
    while true do
      if inner then
        local v = inner()
        if v ~= nil then return v end
      end
      local nxt = outer()
      if nxt == nil then return nil end
      inner = iter(nxt, "chain")
    end
  end
end

-- chain(a, b, ...): the items of a, then of b, ...; chain.from_iterable(list_of_iterables)
M.chain = setmetatable({ from_iterable = from_iterable }, {
  __call = function(_, ...) return from_iterable({ ... }) end,
})

-- islice(iterable, stop) or islice(iterable, start, stop[, step]); stop nil is None (no end)
function M.islice(iterable, ...)
  local n = select("#", ...)
  local start, stop, step
  if n <= 1 then start, stop, step = 0, (...), 1
  else start, stop, step = ... end
  if n == 0 then U.error("islice expected at least 2 arguments, got 1") end
  local function index(v)
    if v == nil then return nil end
    if math.type(v) ~= "integer" and not (math.type(v) == "float" and v == math.floor(v)) or v < 0 then
      U.error("Indices for islice() must be None or an integer: 0 <= x <= sys.maxsize.")
    end
    return math.tointeger(v)
  end
  start, stop = index(start) or 0, index(stop)
  if step == nil then step = 1 end
  if math.type(step) ~= "integer" or step < 1 then
    U.error("Step for islice() must be a positive integer or None.")
  end
  local it, pos, nxt = iter(iterable, "islice"), 0, start -- pos: items consumed
  return function()
    if stop and nxt >= stop then return nil end
    while pos < nxt do
      if it() == nil then stop = 0; return nil end
      pos = pos + 1
    end
    local v = it()
    pos = pos + 1
    if v == nil then stop = 0; return nil end
    nxt = nxt + step
    return v
  end
end

-- product(*iterables, repeat=1): the Cartesian product, the rightmost input advancing fastest
function M.product(...)
  local args, kw = pop_kw("product", { ["repeat"] = true }, ...)
  local rep = U.check_int("product", "repeat", kw["repeat"] or 1)
  if rep < 0 then U.error("repeat argument cannot be negative") end
  local pools = {}
  for i = 1, args.n do pools[i] = M.list(args[i]) end
  local all = {}
  for _ = 1, rep do for _, p in ipairs(pools) do all[#all + 1] = p end end
  local idx, done = {}, false
  for i, p in ipairs(all) do
    idx[i] = 1
    if #p == 0 then done = true end
  end
  local first = true
  return function()
    if done then return nil end
    if first then
      first = false
    else
      local i = #all
      while i >= 1 and idx[i] == #all[i] do idx[i] = 1; i = i - 1 end
      if i == 0 then done = true; return nil end
      idx[i] = idx[i] + 1
    end
    local out = {}
    for i, p in ipairs(all) do out[i] = p[idx[i]] end
    return out
  end
end

-- An iterator over pool[idx[1]], ..., pool[idx[r]] for idx as it starts, then after each
-- advance() (which moves idx on to the next positions, or returns false when there are none)
local function index_walk(pool, idx, r, advance)
  local first, done = true, false
  return function()
    if done then return nil end
    if first then first = false
    elseif not advance() then done = true; return nil end
    local out = {}
    for i = 1, r do out[i] = pool[idx[i]] end
    return out
  end
end

-- the items of iterable as a list, their count, and r checked (r nil: the count)
local function pool_and_r(fname, iterable, r, required)
  if required and r == nil then U.errorf("%s() missing required argument 'r'", fname) end
  local pool = M.list(iterable)
  return pool, #pool, check_r(fname, r) or #pool
end

-- permutations(iterable, r=None): r-length arrangements in lexicographic order of positions
function M.permutations(iterable, r)
  local pool, n, r = pool_and_r("permutations", iterable, r)
  if r > n then return function() return nil end end
  local idx, used = {}, {}
  for i = 1, r do idx[i] = i; used[i] = true end
  return index_walk(pool, idx, r, function()
    for j = r, 1, -1 do -- the rightmost slot that can take a larger unused position
      used[idx[j]] = nil
      local v = idx[j] + 1
      while v <= n and used[v] do v = v + 1 end
      if v <= n then
        idx[j], used[v] = v, true
        local free = 1 -- the slots after it take the smallest unused positions
        for k = j + 1, r do
          while used[free] do free = free + 1 end
          idx[k], used[free] = free, true
        end
        return true
      end
    end
    return false
  end)
end

-- combinations(iterable, r): r-length subsequences in lexicographic order of positions
function M.combinations(iterable, r)
  local pool, n, r = pool_and_r("combinations", iterable, r, true)
  if r > n then return function() return nil end end
  local idx = {}
  for i = 1, r do idx[i] = i end
  return index_walk(pool, idx, r, function()
    local i = r
    while i >= 1 and idx[i] == i + n - r do i = i - 1 end
    if i == 0 then return false end
    idx[i] = idx[i] + 1
    for j = i + 1, r do idx[j] = idx[j - 1] + 1 end
    return true
  end)
end

-- combinations_with_replacement(iterable, r): as combinations, an item may repeat
function M.combinations_with_replacement(iterable, r)
  local pool, n, r = pool_and_r("combinations_with_replacement", iterable, r, true)
  if n == 0 and r > 0 then return function() return nil end end
  local idx = {}
  for i = 1, r do idx[i] = 1 end
  return index_walk(pool, idx, r, function()
    local i = r
    while i >= 1 and idx[i] == n do i = i - 1 end
    if i == 0 then return false end
    local v = idx[i] + 1
    for j = i, r do idx[j] = v end
    return true
  end)
end

-- zip_longest(*iterables, fillvalue=None): lists of one item from each, the exhausted filled
function M.zip_longest(...)
  local args, kw = pop_kw("zip_longest", { fillvalue = true }, ...)
  local its, live = {}, args.n
  for i = 1, args.n do its[i] = iter(args[i], "zip_longest") end
  return function()
    if live == 0 then return nil end
    local out = {}
    for i = 1, args.n do
      local v
      if its[i] then
        v = its[i]()
        if v == nil then its[i] = false; live = live - 1 end
      end
      if v == nil then v = kw.fillvalue end
      out[i] = v
    end
    if live == 0 then return nil end
    return out
  end
end

-- accumulate(iterable, func=operator.add, *, initial=None): running totals (or func's folds)
function M.accumulate(iterable, ...)
  local args, kw = pop_kw("accumulate", { initial = true, func = true }, ...)
  local func = args[1] or kw.func or function(a, b) return a + b end
  local it, acc, started = iter(iterable, "accumulate"), kw.initial, false
  return function()
    if not started then
      started = true
      if acc ~= nil then return acc end
      acc = it()
      return acc
    end
    if acc == nil then return nil end
    local v = it()
    if v == nil then acc = nil; return nil end
    acc = func(acc, v)
    return acc
  end
end

-- groupby(iterable, key=None): for each run of consecutive items with equal keys, the key and an
-- iterator over the run (the run is read ahead, so a group stays valid after the next step)
function M.groupby(iterable, key)
  key = key or function(v) return v end
  local it = iter(iterable, "groupby")
  local nxt = it()
  return function()
    if nxt == nil then return nil end
    local k, run = key(nxt), { nxt }
    while true do
      nxt = it()
      if nxt == nil or key(nxt) ~= k then break end
      run[#run + 1] = nxt
    end
    return k, iter(run)
  end
end

-- starmap(function, iterable): function(table.unpack(item)) for each item (a list)
function M.starmap(fn, iterable)
  local it = iter(iterable, "starmap")
  return function()
    local args = it()
    if args == nil then return nil end
    local v = fn(table.unpack(M.list(args)))
    return v
  end
end

-- takewhile(predicate, iterable): items while predicate holds
function M.takewhile(pred, iterable)
  local it, done = iter(iterable, "takewhile"), false
  return function()
    if done then return nil end
    local v = it()
    if v == nil or not pred(v) then done = true; return nil end
    return v
  end
end

-- dropwhile(predicate, iterable): items from the first for which predicate fails
function M.dropwhile(pred, iterable)
  local it, dropping = iter(iterable, "dropwhile"), true
  return function()
    if dropping then
      dropping = false
      while true do
        local v = it()
        if v == nil or not pred(v) then return v end
      end
    end
    return it()
  end
end

-- filterfalse(predicate, iterable): items for which predicate fails (predicate nil: falsy items)
function M.filterfalse(pred, iterable)
  local it = iter(iterable, "filterfalse")
  return function()
    while true do
      local v = it()
      if v == nil then return nil end
      if pred then
        if not pred(v) then return v end
      elseif v == false or v == 0 or v == "" then
        return v
      end
    end
  end
end

-- compress(data, selectors): the items of data whose selector is true (Python truth of numbers)
function M.compress(data, selectors)
  local d, s = iter(data, "compress"), iter(selectors, "compress")
  return function()
    while true do
      local v, sel = d(), s()
      if v == nil or sel == nil then return nil end
      if sel ~= false and sel ~= 0 then return v end
    end
  end
end

-- pairwise(iterable): overlapping pairs {a, b}, {b, c}, ...
function M.pairwise(iterable)
  local it = iter(iterable, "pairwise")
  local prev = it()
  return function()
    if prev == nil then return nil end
    local v = it()
    if v == nil then prev = nil; return nil end
    local out = { prev, v }
    prev = v
    return out
  end
end

-- batched(iterable, n): lists of n items, the last one shorter
function M.batched(iterable, n)
  n = U.check_int("batched", "n", n)
  if n < 1 then U.error("n must be at least one") end
  local it = iter(iterable, "batched")
  return function()
    local out = {}
    for i = 1, n do
      local v = it()
      if v == nil then break end
      out[i] = v
    end
    if #out > 0 then return out end
  end
end

-- tee(iterable, n=2): n independent iterators over the same items (returned as n values)
function M.tee(iterable, n)
  n = U.check_int("tee", "n", n or 2)
  if n < 0 then U.error("n must be >= 0") end
  local it, buf, pos, last = iter(iterable, "tee"), {}, {}, 0 -- buf[i]: item i; last: items read
  local function trim()
    local low = math.huge
    for j = 1, n do low = math.min(low, pos[j]) end
    for i = low, 1, -1 do
      if buf[i] == nil then break end
      buf[i] = nil
    end
  end
  local out = {}
  for j = 1, n do
    pos[j] = 0
    out[j] = function()
      local i = pos[j] + 1
      if i > last then
        local v = it()
        if v == nil then return nil end
        last = last + 1
        buf[last] = v
      end
      pos[j] = i
      local v = buf[i]
      trim()
      return v
    end
  end
  return table.unpack(out, 1, n)
end

return M
