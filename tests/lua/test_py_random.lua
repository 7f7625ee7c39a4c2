-- random (bindings/lua/random.lua): Python 3's random module, checked draw for draw against CPython.
-- The reference values P.* below were printed by CPython 3.11.7 (python3, no torch) running
-- these commands, each section from a fresh seed (`import random as R`):
--   seed42_random10:   R.seed(42); [R.random() for _ in range(10)]
--   seed42_randint:    R.seed(42); [R.randint(1, 6) for _ in range(20)]
--   seed1_shuffle10:   R.seed(1); x = list(range(10)); R.shuffle(x); x
--   seed2_samples:     R.seed(2); [R.sample(range(100), 5), R.sample(range(10), 5), R.sample(range(30), 8),
--                      R.sample(range(200), 30), R.sample(range(5), 0), R.sample(range(6), 6)]
--   seed3_choice:      R.seed(3); [R.choice(["cat", "dog", "emu"]) for _ in range(8)] + [R.choice("abcdef") for _ in range(4)]
--   seed4_gauss:       R.seed(4); [R.gauss() for _ in range(5)] + [R.gauss(10, 2) for _ in range(3)]
--   seed5_floats:      R.seed(5); [R.normalvariate() for _ in range(3)] + [R.normalvariate(1, 0.5)]
--                      + [R.expovariate(2.0) for _ in range(3)] + [R.expovariate(1.0)] + [R.uniform(-1, 3) for _ in range(3)]
--                      + [R.triangular(), R.triangular(0, 10, 2), R.lognormvariate(0, 1), R.paretovariate(3), R.weibullvariate(1, 2)]
--   seed_big:          R.seed(2**70 + 5); [R.random() for _ in range(3)]
--   seed_<name>:       R.seed(s); [R.random() for _ in range(2)] for s = -7, 0, 2**32, 2**63 - 1, -2**63, 1.5, -2.0, 1e300, -0.1
--   inst1234_*:        r = random.Random(1234); x = list(range(20)); r.shuffle(x); x; [r.random(), r.randint(0, 100)]
--   seed6_bits:        R.seed(6); [R.getrandbits(k) for k in (1, 31, 32, 33, 63, 0, 5)]
--   seed7_randrange:   R.seed(7); [R.randrange(10), R.randrange(5, 100, 7), R.randrange(10, 0, -3), R.randrange(-5, 5),
--                      R.randrange(2**62 + 1), R.randrange(2**63 - 1), R.randrange(0, 1000, 1)]
--   seed8_choices:     R.seed(8); [R.choices(range(10), k=5), R.choices(["a", "b", "c"], [1, 2, 3], k=6),
--                      R.choices(["a", "b", "c"], cum_weights=[0.5, 0.5, 2.0], k=4), R.choices("xyz"), R.choices(["p", "q"], [0, 1], k=3)]
--   seed9_counts:      R.seed(9); R.sample(["red", "blue"], 5, counts=[4, 2])
--   state42:           R.seed(42); R.random(); st = R.getstate(); [st[0], st[1][0], st[1][1], st[1][623], st[1][624]]
--   state_gauss:       R.seed(10); R.gauss(); [R.getstate()[2]]
--   seed11_*:          R.seed(11); x = list(range(1000)); R.shuffle(x); x[:10]; [R.random()]
local T = ...
local random = require "random"
local P = {}
P.seed42_random10 = {0.6394267984578837, 0.025010755222666936, 0.27502931836911926, 0.22321073814882275, 0.7364712141640124, 0.6766994874229113, 0.8921795677048454, 0.08693883262941615, 0.4219218196852704, 0.029797219438070344}
P.seed42_randint = {6, 1, 1, 6, 3, 2, 2, 2, 6, 1, 6, 6, 5, 1, 5, 4, 1, 1, 1, 2}
P.seed1_shuffle10 = {6, 8, 9, 7, 5, 3, 0, 4, 1, 2}
P.seed2_samples = {{7, 11, 10, 46, 21}, {4, 9, 3, 8, 0}, {18, 21, 5, 13, 20, 12, 23, 16}, {95, 139, 113, 128, 68, 9, 7, 93, 119, 81, 97, 108, 134, 42, 143, 45, 60, 59, 6, 184, 83, 44, 34, 130, 176, 92, 131, 172, 185, 46}, {}, {3, 5, 2, 4, 1, 0}}
P.seed3_choice = {"cat", "emu", "emu", "cat", "dog", "emu", "dog", "emu", "e", "a", "e", "a"}
P.seed4_gauss = {0.040855944793104046, 0.46486542013947213, -0.46089783563917397, 0.35262566298128933, 0.9261710268375286, 10.822602947027814, 13.124128451726428, 8.229847670534467}
P.seed5_floats = {0.816540072671196, -1.5120487741240614, -0.07042871531208747, 1.0881016506732781, 0.006600469923727109, 0.1221387800484644, 0.16389269459355613, 2.48105852502906, 2.062901806516567, -0.36158315056784707, 2.188587965724818, 0.2634078761150691, 4.467930011043726, 2.238869169264774, 1.0842569364607795, 2.0102379117560583}
P.seed_big = {0.46679953776226335, 0.4748702691919824, 0.3684083919879382}
P.seed_m7 = {0.32383276483316237, 0.15084917392450192}
P.seed_0 = {0.8444218515250481, 0.7579544029403025}
P.seed_2p32 = {0.11299430095636409, 0.41782886486292836}
P.seed_maxint = {0.3166448820870279, 0.631259308253863}
P.seed_minint = {0.5534639983914199, 0.9406144709090462}
P.seed_f15 = {0.551763726942059, 0.2560930858958398}
P.seed_fm2 = {0.13119521545503066, 0.30408191479048297}
P.seed_f1e300 = {0.2614143642581235, 0.06776358709700359}
P.seed_fm01 = {0.9101117294798381, 0.42767977949286073}
P.inst1234_shuffle20 = {19, 13, 4, 9, 16, 7, 6, 8, 17, 18, 5, 12, 15, 11, 10, 1, 2, 0, 3, 14}
P.inst1234_next = {0.14855463870828756, 23}
P.seed6_bits = {1, 1232269300, 3530265750, 346043753, 2413032322315101299, 0, 1}
P.seed7_randrange = {5, 19, 1, -5, 868196408185819179, 5375270654777870840, 59}
P.seed8_choices = {{2, 9, 1, 7, 0}, {"b", "c", "b", "c", "b", "b"}, {"c", "a", "c", "a"}, {"x"}, {"q", "q", "q"}}
P.seed9_counts = {"red", "blue", "red", "red", "red"}
P.state42 = {3, 2468570525, 44967195, 1079217633, 2}
P.state_gauss = {-0.45909415683868526}
P.seed11_shuffle1000_head = {764, 731, 210, 142, 527, 807, 769, 289, 8, 658}
P.seed11_after = {0.06405647532612202}

local function range(a, b) -- Python's list(range(a, b)) / list(range(a))
  if b == nil then a, b = 0, a end
  local t = {}
  for i = a, b - 1 do t[#t + 1] = i end
  return t
end
local function draws(n, f)
  local t = {}
  for i = 1, n do t[i] = f() end
  return t
end

-- the generator and the seeding
random.seed(42)
T.eq(draws(10, random.random), P.seed42_random10, "seed(42): random() x10")
random.seed(42)
T.eq(draws(20, function() return random.randint(1, 6) end), P.seed42_randint, "seed(42): randint(1, 6) x20")
random.seed(random.bigint("1180591620717411303429"))
T.eq(draws(3, random.random), P.seed_big, "seed(2**70 + 5)")
random.seed(random.bigint("-1180591620717411303429"))
T.eq(draws(3, random.random), P.seed_big, "a negative big int seeds as its absolute value")
for name, s in pairs({ seed_m7 = -7, seed_0 = 0, seed_2p32 = 1 << 32, seed_maxint = math.maxinteger,
  seed_minint = math.mininteger, seed_f15 = 1.5, seed_fm2 = -2.0, seed_f1e300 = 1e300, seed_fm01 = -0.1 }) do
  random.seed(s)
  T.eq(draws(2, random.random), P[name], name)
end
random.seed(7.0)
local a = random.random()
random.seed(7)
T.eq(random.random(), a, "seed(7.0) is seed(7) (hash(7.0) == 7)")
random.seed(random.bigint("4294967296"))
T.eq(draws(2, random.random), P.seed_2p32, "bigint and a Lua integer of the same value agree")

-- integers
random.seed(6)
T.eq({ random.getrandbits(1), random.getrandbits(31), random.getrandbits(32), random.getrandbits(33),
  random.getrandbits(63), random.getrandbits(0), random.getrandbits(5) }, P.seed6_bits, "getrandbits")
random.seed(7)
T.eq({ random.randrange(10), random.randrange(5, 100, 7), random.randrange(10, 0, -3), random.randrange(-5, 5),
  random.randrange((1 << 62) + 1), random.randrange(math.maxinteger), random.randrange(0, 1000, 1) },
  P.seed7_randrange, "randrange")

-- sequences
random.seed(1)
local x = range(10)
T.eq(random.shuffle(x), nil, "shuffle returns nothing")
T.eq(x, P.seed1_shuffle10, "shuffle(range(10))")
random.seed(2)
T.eq({ random.sample(range(100), 5), random.sample(range(10), 5), random.sample(range(30), 8),
  random.sample(range(200), 30), random.sample(range(5), 0), random.sample(range(6), { k = 6 }) },
  P.seed2_samples, "sample: the set branch (100, 5), the pool branch (10, 5), (30, 8), (200, 30), k = 0 and k = n")
random.seed(3)
local c = draws(8, function() return random.choice({ "cat", "dog", "emu" }) end)
for i = 1, 4 do c[#c + 1] = random.choice("abcdef") end
T.eq(c, P.seed3_choice, "choice on a list and on a string")
random.seed(8)
T.eq({ random.choices(range(10), { k = 5 }), random.choices({ "a", "b", "c" }, { 1, 2, 3 }, 6),
  random.choices({ "a", "b", "c" }, { cum_weights = { 0.5, 0.5, 2.0 }, k = 4 }), random.choices("xyz"),
  random.choices({ "p", "q" }, { weights = { 0, 1 }, k = 3 }) }, P.seed8_choices, "choices")
random.seed(9)
T.eq(random.sample({ "red", "blue" }, 5, { counts = { 4, 2 } }), P.seed9_counts, "sample with counts")
random.seed(11)
x = range(1000)
random.shuffle(x)
T.eq(table.move(x, 1, 10, 1, {}), P.seed11_shuffle1000_head, "shuffle(range(1000)): the first ten")
T.eq(random.random(), P.seed11_after[1], "shuffle draws as many numbers as Python's")
local sorted = table.move(x, 1, 1000, 1, {})
table.sort(sorted)
T.eq(sorted, range(1000), "shuffle keeps the elements")

-- floats
random.seed(4)
local g = draws(5, random.gauss)
for i = 1, 3 do g[#g + 1] = random.gauss(10, 2) end
T.eq(g, P.seed4_gauss, "gauss, its cached second value included")
random.seed(5)
local f = draws(3, random.normalvariate)
f[#f + 1] = random.normalvariate(1, 0.5)
for i = 1, 3 do f[#f + 1] = random.expovariate(2.0) end
f[#f + 1] = random.expovariate()
for i = 1, 3 do f[#f + 1] = random.uniform(-1, 3) end
for _, v in ipairs({ random.triangular(), random.triangular(0, 10, 2), random.lognormvariate(0, 1),
  random.paretovariate(3), random.weibullvariate(1, 2) }) do f[#f + 1] = v end
T.eq(f, P.seed5_floats, "normalvariate, expovariate, uniform, triangular, lognormvariate, paretovariate, weibullvariate")
T.eq(random.triangular(3, 3, 3), 3, "triangular with low == high gives low")

-- state
random.seed(42)
random.random()
local st = random.getstate()
T.eq({ st[1], st[2][1], st[2][2], st[2][624], st[2][625] }, P.state42, "getstate matches Python's tuple")
T.eq(#st[2], 625, "the internal state has 625 entries")
local want = draws(5, random.random)
random.seed(0)
random.setstate(st)
T.eq(draws(5, random.random), want, "setstate replays the draws")
random.seed(10)
random.gauss()
st = random.getstate()
T.eq(st[3], P.state_gauss[1], "getstate keeps gauss's cached value")
local g2 = random.gauss()
random.seed(1)
random.setstate(st)
T.eq(random.gauss(), g2, "setstate restores gauss's cached value")
random.seed(10)
random.gauss()
random.seed(10)
T.check(random.getstate()[3] == nil, "seed drops gauss's cached value")

-- Random instances
local r = random.Random(1234)
random.seed(99)
x = range(20)
r:shuffle(x)
T.eq(x, P.inst1234_shuffle20, "Random(1234):shuffle(range(20))")
T.eq({ r:random(), r:randint(0, 100) }, P.inst1234_next, "Random(1234) then random(), randint")
local r2 = random.Random()
r2:seed(1234)
x = range(20)
r2:shuffle(x)
T.eq(x, P.inst1234_shuffle20, "Random():seed(1234) as Random(1234)")
random.seed(42)
random.Random(5):random()
T.eq(random.random(), P.seed42_random10[1], "an instance does not move the module's generator")
T.check(random.Random():random() ~= random.Random():random(), "Random() seeds from the OS: two instances differ")
random.seed()
local u = random.random()
T.check(u >= 0 and u < 1, "seed() with no argument")

-- errors as CPython's
local function err(f, msg, what)
  local ok, e = pcall(f)
  T.check(not ok and tostring(e):find(msg, 1, true) ~= nil, what .. ": " .. tostring(e))
end
err(function() random.randrange(5, 5) end, "empty range in randrange(5, 5)", "randrange(5, 5)")
err(function() random.randrange(0) end, "empty range in randrange(0)", "randrange(0)")
err(function() random.randrange(0, 10, -1) end, "empty range in randrange(0, 10, -1)", "randrange(0, 10, -1)")
err(function() random.randrange(0, 10, 0) end, "zero step for randrange()", "randrange step 0")
err(function() random.randrange(1.5) end, "'float' object cannot be interpreted as an integer", "randrange(1.5)")
err(function() random.randint(3, 2) end, "empty range in randrange(3, 3)", "randint(3, 2)")
err(function() random.choice({}) end, "Cannot choose from an empty sequence", "choice({})")
err(function() random.choice("") end, "Cannot choose from an empty sequence", "choice('')")
err(function() random.sample(range(3), 4) end, "Sample larger than population or is negative", "sample k > n")
err(function() random.sample(range(3), -1) end, "Sample larger than population or is negative", "sample k < 0")
err(function() random.sample(range(3)) end, "missing required argument 'k'", "sample without k")
err(function() random.sample(range(3), 1, { count = { 1 } }) end, "unknown keyword 'count'", "sample bad keyword")
err(function() random.sample({ "a" }, 1, { counts = { 1, 2 } }) end, "The number of counts does not match the population", "counts size")
err(function() random.sample({ "a" }, 1, { counts = { 0 } }) end, "Total of counts must be greater than zero", "counts total")
err(function() random.choices({ "a", "b" }, { 1 }) end, "The number of weights does not match the population", "weights size")
err(function() random.choices({ "a", "b" }, { 0, 0 }) end, "Total of weights must be greater than zero", "weights total 0")
err(function() random.choices({ "a", "b" }, { 1, math.huge }) end, "Total of weights must be finite", "weights inf")
err(function() random.choices({ "a" }, { 1 }, { cum_weights = { 1 } }) end, "Cannot specify both weights and cumulative weights", "both weights")
err(function() random.choices({}) end, "list index out of range", "choices on an empty population")
err(function() random.choices({}, { weights = {} }) end, "list index out of range", "weighted choices on an empty population")
T.eq(random.choices({}, { k = 0 }), {}, "choices k = 0 on an empty population")
err(function() random.getrandbits(-1) end, "number of bits must be non-negative", "getrandbits(-1)")
err(function() random.getrandbits(64) end, "more than 63 bits do not fit a Lua integer", "getrandbits(64)")
-- str and bytes seeds go through SHA-512 as CPython's (python3: random.seed(s); random.random(), randint(1, 1000))
for _, c in ipairs({ { "hello", 0.3537754404730722, 680 }, { "", 0.9602256525641875, 610 },
  { "\0\0abc", 0.2834855576453934, 813 }, { "h\xc3\xa9llo", 0.013203794245314593, 856 } }) do
  random.seed(c[1])
  T.eq({ random.random(), random.randint(1, 1000) }, { c[2], c[3] }, "seed(" .. string.format("%q", c[1]) .. ")")
end
err(function() random.seed({}) end, "The only supported seed types are: None", "seed({})")
err(function() random.seed(0 / 0) end, "NaN", "seed(nan)")
err(function() random.bigint("12a") end, "bigint: expected a decimal integer string", "bigint('12a')")
err(function() random.setstate({ 2, {} }) end, "state with version 2 passed to Random.setstate() of version 3", "setstate version")
err(function() random.setstate({ 3, { 1, 2 } }) end, "state vector is the wrong size", "setstate size")
st = random.getstate()
st[2][625] = 700
err(function() random.setstate(st) end, "invalid state", "setstate index")
