-- collections: Counter, defaultdict, OrderedDict, deque, namedtuple against Python's results
-- worked out by hand
local T = ...
local C = require "collections"
local it = require "itertools"

local function items(d) -- {{k, v}, ...} in iteration order
  local out = {}
  for k, v in pairs(d) do out[#out + 1] = { k, v } end
  return out
end

T.test("Counter", function()
  local c = C.Counter("abracadabra")
  T.eq(items(c), { { "a", 5 }, { "b", 2 }, { "r", 2 }, { "c", 1 }, { "d", 1 } }, "first-seen order")
  T.eq(c.a, 5, "c['a']")
  T.eq(c.z, 0, "a missing key counts 0")
  T.eq(#c, 5, "len")
  T.eq(c:total(), 11, "total")
  local mc = c:most_common(3)
  T.eq(#mc, 3, "most_common(3) length")
  T.eq({ mc[1][1], mc[2][1], mc[3][1] }, { "a", "b", "r" }, "ties in first-seen order")
  local names = {}
  for k, n in c:most_common() do names[#names + 1] = k .. n end
  T.eq(names, { "a5", "b2", "r2", "c1", "d1" }, "for k, n in most_common()")
  T.eq(#c:most_common(0), 0, "most_common(0)")
  T.eq(#c:most_common(99), 5, "most_common(n > len)")
  T.eq(tostring(c), "Counter({'a': 5, 'b': 2, 'r': 2, 'c': 1, 'd': 1})", "repr")
  T.eq(tostring(C.Counter()), "Counter()", "empty repr")

  -- ties broken by first sight, not by key: 'z' was seen before 'a'
  local t = C.Counter({ "z", "a", "a", "z", "b" })
  T.eq(t:most_common(2)[1][1], "z", "z first")
  T.eq(tostring(t), "Counter({'z': 2, 'a': 2, 'b': 1})", "tie repr")

  local u = C.Counter({ a = 3, b = 1 })
  u:update({ "a", "c" })
  u:update({ b = 5 })
  T.eq(items(u), { { "a", 4 }, { "b", 6 }, { "c", 1 } }, "update from a list and a mapping")
  u:subtract({ a = 5, d = 2 })
  T.eq(items(u), { { "a", -1 }, { "b", 6 }, { "c", 1 }, { "d", -2 } }, "subtract keeps negative counts")
  T.eq(u:total(), 4, "total with negatives")
  T.eq(it.list(u:elements()), { "b", "b", "b", "b", "b", "b", "c" }, "elements skips counts below 1")
  T.eq(it.list(C.Counter({ x = 2, y = 1 }):elements()), { "x", "x", "y" }, "elements order")

  local a, b = C.Counter({ "a", "a", "a", "b" }), C.Counter({ "a", "b", "b", "c" })
  T.eq(items(a + b), { { "a", 4 }, { "b", 3 }, { "c", 1 } }, "c + d")
  T.eq(items(a - b), { { "a", 2 } }, "c - d drops counts below 1")
  T.eq(items(b - a), { { "b", 1 }, { "c", 1 } }, "d - c")
  T.check(C.Counter("aab") == C.Counter({ a = 2, b = 1 }), "==")
  T.check(C.Counter("aab") ~= C.Counter("ab"), "~=")

  c.a = c.a + 1
  c.q = 0
  T.eq(c.a, 6, "c['a'] += 1")
  T.eq(#c, 6, "a key set to 0 stays")
  c.q = nil
  T.eq(#c, 5, "del c['q']")
  c.keys = 2
  T.eq(c:get("keys"), 2, "a key named like a method")
  T.eq(C.Counter():get("update", 0), 0, "get of a missing method-named key")
  T.eq(c.__name, nil, "a missing __ key is nil, not 0")
  T.raises(function() return a + 1 end, "unsupported operand type(s) for +: 'Counter' and 'int'")
  T.raises(function() C.Counter(5) end, "Counter: 'int' object is not iterable")
end)

T.test("defaultdict", function()
  local d = C.defaultdict(function() return {} end)
  for _, kv in ipairs({ { "yellow", 1 }, { "blue", 2 }, { "yellow", 3 }, { "blue", 4 }, { "red", 1 } }) do
    table.insert(d[kv[1]], kv[2])
  end
  T.eq(items(d), { { "yellow", { 1, 3 } }, { "blue", { 2, 4 } }, { "red", { 1 } } }, "defaultdict(list)")
  T.eq(tostring(d):match("{.*}"), "{'yellow': [1, 3], 'blue': [2, 4], 'red': [1]}", "repr body")
  local n = C.defaultdict(function() return 0 end)
  for ch in ("mississippi"):gmatch(".") do n[ch] = n[ch] + 1 end
  T.eq(items(n), { { "m", 1 }, { "i", 4 }, { "s", 4 }, { "p", 2 } }, "defaultdict(int)")
  T.eq(n:get("z"), nil, "get does not create")
  T.eq(#n, 4, "still 4 keys")
  T.check(type(n.default_factory) == "function", "default_factory")
  local none = C.defaultdict(nil, { a = 1 })
  T.eq(none.a, 1, "initial mapping")
  T.raises(function() return none.b end, "'b'")
  T.raises(function() C.defaultdict(3) end, "first argument must be callable or None")
end)

T.test("OrderedDict", function()
  local od = C.OrderedDict({ { "a", 1 }, { "b", 2 }, { "c", 3 } })
  od:move_to_end("a")
  T.eq(od:keys(), { "b", "c", "a" }, "move_to_end")
  od:move_to_end("a", false)
  T.eq(od:keys(), { "a", "b", "c" }, "move_to_end(last=False)")
  od:move_to_end("c", { last = false })
  T.eq(od:keys(), { "c", "a", "b" }, "move_to_end keyword")
  local k, v = od:popitem()
  T.eq({ k, v }, { "b", 2 }, "popitem")
  k, v = od:popitem(false)
  T.eq({ k, v }, { "c", 3 }, "popitem(last=False)")
  T.eq(items(od), { { "a", 1 } }, "what is left")
  od.x = 9
  T.eq(od:keys(), { "a", "x" }, "set after moves")
  T.raises(function() od:move_to_end("zz") end, "'zz'")
  od:popitem(); od:popitem()
  T.raises(function() od:popitem() end, "dictionary is empty")
  T.eq(tostring(C.OrderedDict({ { "p", 1 } })), "OrderedDict({'p': 1})", "the nn OrderedDict")
end)

T.test("deque", function()
  local d = C.deque({ 1, 2, 3 })
  d:append(4)
  d:appendleft(0)
  T.eq(#d, 5, "len")
  T.eq({ d[1], d[2], d[5] }, { 0, 1, 4 }, "1-based indexing")
  T.eq({ d[-1], d[-5] }, { 4, 0 }, "negative indexing")
  T.eq({ d[0], d[6], d[-6] }, { nil, nil, nil }, "outside reads nil")
  T.eq(tostring(d), "deque([0, 1, 2, 3, 4])", "repr")
  T.eq(d:pop(), 4, "pop")
  T.eq(d:popleft(), 0, "popleft")
  d:extend({ 7, 8 })
  d:extendleft({ "a", "b" })
  T.eq(it.list(d), { "b", "a", 1, 2, 3, 7, 8 }, "extend, extendleft reversed")
  d:rotate(2)
  T.eq(it.list(d), { 7, 8, "b", "a", 1, 2, 3 }, "rotate(2)")
  d:rotate(-3)
  T.eq(it.list(d), { "a", 1, 2, 3, 7, 8, "b" }, "rotate(-3)")
  d:rotate()
  T.eq(it.list(d), { "b", "a", 1, 2, 3, 7, 8 }, "rotate()")
  d:rotate(15) -- 15 % 7 = 1
  T.eq(it.list(d), { 8, "b", "a", 1, 2, 3, 7 }, "rotate past the length")
  d[1] = 80
  d[-1] = 70
  T.eq({ d[1], d[7] }, { 80, 70 }, "item assignment")
  local seen = {}
  for i, x in ipairs(d) do seen[i] = x end
  T.eq(seen, { 80, "b", "a", 1, 2, 3, 70 }, "ipairs")
  seen = {}
  for i, x in pairs(d) do seen[i] = x end
  T.eq(#seen, 7, "pairs")
  d:reverse()
  T.eq(it.list(d), { 70, 3, 2, 1, "a", "b", 80 }, "reverse")
  d:remove("a")
  T.eq(it.list(d), { 70, 3, 2, 1, "b", 80 }, "remove")
  T.eq(C.deque("abcab"):count("a"), 2, "count")
  T.raises(function() d:remove("zz") end, "deque.remove(x): x not in deque")
  T.raises(function() d[7] = 1 end, "deque index out of range")
  T.raises(function() return d[1.5] end, "sequence index must be integer, not 'float'")
  d:clear()
  T.eq(#d, 0, "clear")
  T.raises(function() d:pop() end, "pop from an empty deque")
  T.raises(function() d:popleft() end, "pop from an empty deque")

  local m = C.deque({ 1, 2, 3 }, 3)
  m:append(4)
  T.eq(it.list(m), { 2, 3, 4 }, "maxlen drops from the left")
  m:appendleft(0)
  T.eq(it.list(m), { 0, 2, 3 }, "appendleft drops from the right")
  m:extend({ 5, 6 })
  T.eq(tostring(m), "deque([3, 5, 6], maxlen=3)", "extend with maxlen, repr")
  T.eq(m.maxlen, 3, "maxlen")
  T.eq(it.list(C.deque("abcdef", { maxlen = 2 })), { "e", "f" }, "keyword maxlen keeps the last")
  local zero = C.deque({ 1, 2 }, 0)
  zero:append(1)
  T.eq(#zero, 0, "maxlen 0 keeps nothing")
  T.eq(C.deque({ 1, 2 }), C.deque({ 1, 2 }), "==")
  local cp = m:copy()
  cp:append(9)
  T.eq({ #m, m[3], cp[3], cp.maxlen }, { 3, 6, 9, 3 }, "copy is separate")
  T.raises(function() C.deque({}, -1) end, "maxlen must be non-negative")
  T.raises(function() C.deque({}, { size = 1 }) end, "bad argument #2 to 'deque' (unknown keyword 'size')")
end)

T.test("namedtuple", function()
  local Point = C.namedtuple("Point", { "x", "y" })
  local p = Point(11, 22)
  T.eq({ p.x, p.y, p[1], p[2], p[-1] }, { 11, 22, 11, 22, 22 }, "by name and 1-based position")
  T.eq(#p, 2, "len")
  T.eq(tostring(p), "Point(x=11, y=22)", "repr")
  T.eq(p._fields, { "x", "y" }, "_fields")
  T.eq(Point._fields, { "x", "y" }, "class _fields")
  local a, b = table.unpack(p)
  T.eq(a + b, 33, "unpacking")
  T.eq(p:_asdict():items()[2], { "y", 22 }, "_asdict")
  T.eq(tostring(p:_replace({ x = 33 })), "Point(x=33, y=22)", "_replace")
  T.eq(tostring(p), "Point(x=11, y=22)", "_replace leaves p")
  T.eq(tostring(Point({ y = 2, x = 1 })), "Point(x=1, y=2)", "keywords")
  T.eq(tostring(Point(1, { y = "s" })), "Point(x=1, y='s')", "positional and keyword")
  T.eq(tostring(Point._make({ 5, 6 })), "Point(x=5, y=6)", "_make")
  T.check(Point(1, 2) == Point(1, 2), "==")
  T.check(Point(1, 2) < Point(1, 3), "< item by item")
  T.eq(tostring(Point), "<class 'Point'>", "class repr")

  local Tr = C.namedtuple("Transition", "state, action next_state reward")
  local t = Tr(1, 2, nil, 4)
  T.eq({ t.state, t.next_state, t.reward }, { 1, nil, 4 }, "a nil (None) field")
  T.eq(tostring(t), "Transition(state=1, action=2, next_state=None, reward=4)", "None in repr")
  local D = C.namedtuple("D", { "a", "b", "c" }, { defaults = { 5, 6 } })
  T.eq(tostring(D(1)), "D(a=1, b=5, c=6)", "defaults for the last fields")
  T.eq(D._field_defaults, { b = 5, c = 6 }, "_field_defaults")

  T.raises(function() Point(1) end, "Point() missing 1 required positional argument: 'y'")
  T.raises(function() Point() end, "Point() missing 2 required positional arguments: 'x' and 'y'")
  T.raises(function() Point(1, 2, 3) end, "Point() takes 2 positional arguments but 3 were given")
  T.raises(function() Point({ z = 1 }) end, "Point() got an unexpected keyword argument 'z'")
  T.raises(function() Point(1, { x = 2 }) end, "Point() got multiple values for argument 'x'")
  T.raises(function() p.x = 5 end, "~can't set attribute x of Point")
  T.raises(function() p:_replace({ z = 1 }) end, "Got unexpected field names: ['z']")
  T.raises(function() Point._make({ 1 }) end, "Expected 2 arguments, got 1")
  T.raises(function() C.namedtuple("P", { "a", "a" }) end, "Encountered duplicate field name: 'a'")
  T.raises(function() C.namedtuple("P", { "_a" }) end, "Field names cannot start with an underscore: '_a'")
  T.raises(function() C.namedtuple("P", { "1a" }) end, "Type names and field names must be valid identifiers: '1a'")
  T.raises(function() C.namedtuple("P", { "a" }, { defaults = { 1, 2 } }) end, "Got more default values than field names")
end)

local function device_checks(dev)
  local x = torch.ones(2, { device = dev })
  local d = C.deque({ x, x * 2 }, 2)
  d:append(x * 3)
  T.eq(d[1]:tolist(), { 2.0, 2.0 }, "deque of " .. dev .. " tensors")
  local P = C.namedtuple("P", { "t", "n" })
  local p = P(x, 1)
  T.eq(p.t.device.type, dev, "namedtuple keeps the tensor")
  local c = C.Counter(torch.tensor({ 1, 2, 2 }, { device = dev }):tolist())
  T.eq(c[2], 2, "Counter of a " .. dev .. " tensor's values")
end

device_checks("cpu")
if torch.cuda.is_available() then
  T.test("cuda", function() device_checks("cuda") end)
else
  T.skip("no CUDA", 3)
end
