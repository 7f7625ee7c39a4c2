-- random: Python 3's `random` module for nnrepl (`import random` -> `local random = require "random"`).
-- The same Mersenne Twister (MT19937) seeded as CPython seeds it and the same algorithms on top,
-- so a seeded port draws exactly Python's numbers:
--   random.seed(42); random.random(); random.randint(1, 6); random.choice(list);
--   random.shuffle(list) (in place); random.sample(list, k); random.choices(list, weights, k)
--   local rng = random.Random(1234); rng:shuffle(list)   -- an independent generator
-- Lua lists are 1-based: choice/shuffle/sample treat list[1..n] as Python's x[0..n-1], so the
-- same element is picked and a shuffle leaves the elements in the same order as Python's.
-- Python ints beyond 64 bits: random.bigint("1180591620717411303429") stands for 2**70 + 5 as a
-- seed. Lua floats seed as Python floats do (through hash(x)); a string seeds as Python's str
-- (its UTF-8 bytes) and bytes do, through SHA-512. getrandbits(k) is limited to k <= 63 (a Lua integer).
local U = require "nn_util"

local N, M = 624, 397
local MASK = 0xffffffff

local Random = {}
Random.__index = Random
Random.__name = "Random"

-- ---- MT19937 ----

local function init_genrand(mt, s)
  mt[1] = s & MASK
  for i = 2, N do
    local p = mt[i - 1]
    mt[i] = (1812433253 * (p ~ (p >> 30)) + (i - 1)) & MASK
  end
end

-- key: a list of 32-bit words (least significant first)
local function init_by_array(mt, key)
  init_genrand(mt, 19650218)
  local i, j, n = 2, 1, #key
  for _ = 1, math.max(N, n) do
    local p = mt[i - 1]
    mt[i] = ((mt[i] ~ ((p ~ (p >> 30)) * 1664525)) + key[j] + (j - 1)) & MASK
    i, j = i + 1, j + 1
    if i > N then mt[1] = mt[N]; i = 2 end
    if j > n then j = 1 end
  end
  for _ = 1, N - 1 do
    local p = mt[i - 1]
    mt[i] = ((mt[i] ~ ((p ~ (p >> 30)) * 1566083941)) - (i - 1)) & MASK
    i = i + 1
    if i > N then mt[1] = mt[N]; i = 2 end
  end
  mt[1] = 0x80000000
end

-- the next 32-bit output
local function genrand(self)
  local mt = self._mt
  if self._index >= N then
    for i = 1, N do
      local y = (mt[i] & 0x80000000) | (mt[i % N + 1] & 0x7fffffff)
      local v = mt[(i + M - 1) % N + 1] ~ (y >> 1)
      if y & 1 == 1 then v = v ~ 0x9908b0df end
      mt[i] = v
    end
    self._index = 0
  end
  self._index = self._index + 1
  local y = mt[self._index]
  y = y ~ (y >> 11)
  y = y ~ ((y << 7) & 0x9d2c5680)
  y = y ~ ((y << 15) & 0xefc60000)
  return y ~ (y >> 18)
end

-- ---- seeding ----

-- the 32-bit words of a non-negative 64-bit value read as unsigned ({0} for 0)
local function words64(u)
  local hi = (u >> 32) & MASK
  if hi ~= 0 then return { u & MASK, hi } end
  return { u & MASK }
end

-- Python's hash() of a float (reduced modulo 2**61 - 1), as a 64-bit pattern
local function float_hash(x)
  if x ~= x then U.error("seed: a NaN float has no reproducible seed (Python hashes it by identity)") end
  if x == math.huge then return 314159 end
  if x == -math.huge then return -314159 end
  local P = (1 << 61) - 1
  -- Lua 5.4 has no math.frexp: split x = m * 2^e, 0.5 <= |m| < 1, by hand (exact: powers of 2)
  local m, e = x, 0
  local sign = 1
  if m < 0 then sign, m = -1, -m end
  if m ~= 0 then
    while m >= 1 do m = m / 2; e = e + 1 end
    while m < 0.5 do m = m * 2; e = e - 1 end
  end
  local h = 0
  while m ~= 0 do
    h = ((h << 28) & P) | (h >> (61 - 28))
    m = m * 268435456.0
    e = e - 28
    local y = math.floor(m)
    m = m - y
    h = h + math.tointeger(y)
    if h >= P then h = h - P end
  end
  if e >= 0 then e = e % 61 else e = 61 - 1 - ((-1 - e) % 61) end
  h = ((h << e) & P) | (h >> (61 - e))
  h = h * sign
  if h == -1 then h = -2 end
  return h
end

local BigInt = { __name = "bigint" }
BigInt.__index = BigInt
function BigInt:__tostring() return "bigint(" .. self.text .. ")" end

--- A Python int of any size written in decimal, for seed() (Lua integers stop at 2**63 - 1).
local function bigint(text)
  if type(text) ~= "string" or not text:match("^%s*[-+]?%d+%s*$") then
    U.errorf("bigint: expected a decimal integer string, got %s", U.typename(text) == "str" and string.format("%q", text) or U.typename(text))
  end
  local words = { 0 }
  for d in text:gmatch("%d") do
    local carry = tonumber(d)
    for i = 1, #words do
      local v = words[i] * 10 + carry
      words[i], carry = v & MASK, v >> 32
    end
    if carry ~= 0 then words[#words + 1] = carry end
  end
  return setmetatable({ words = words, text = text:match("^%s*(.-)%s*$") }, BigInt)
end

-- the key CPython's seed builds from a: the 32-bit words of abs(int), of hash(float) as unsigned
local function seed_key(a)
  if a == nil then
    local f = io.open("/dev/urandom", "rb")
    local key = {}
    if f then
      local bytes = f:read(4 * N)
      f:close()
      for i = 1, #bytes // 4 do key[i] = string.unpack("<I4", bytes, 4 * i - 3) end
    end
    if #key == 0 then
      key = words64(os.time() ~ math.floor(os.clock() * 1e9) ~ tonumber(tostring({}):match("0x(%x+)") or "0", 16))
    end
    return key
  end
  if math.type(a) == "integer" then
    if a < 0 then a = -a end -- math.mininteger stays put: as unsigned it is 2**63, its abs
    return words64(a)
  end
  if math.type(a) == "float" then return words64(float_hash(a)) end
  if getmetatable(a) == BigInt then return a.words end
  if type(a) == "string" then
    -- str and bytes (a Lua string is both, UTF-8 text being its encode()): the big-endian integer
    -- of a .. sha512(a), as 32-bit words from the least significant, leading zero words dropped
    local b = a .. require("hashlib").sha512(a):digest()
    local key = {}
    for e = #b, 1, -4 do
      local w = 0
      for i = math.max(1, e - 3), e do w = (w << 8) | b:byte(i) end
      key[#key + 1] = w
    end
    while #key > 1 and key[#key] == 0 do key[#key] = nil end
    return key
  end
  U.error("The only supported seed types are: None,\nint, float, str, bytes, and bytearray.")
end

function Random:seed(a)
  init_by_array(self._mt, seed_key(a))
  self._index = N
  self.gauss_next = nil
end

setmetatable(Random, { __call = function(cls, a)
  local self = setmetatable({ _mt = {}, _index = N }, cls)
  self:seed(a)
  return self
end })

-- ---- state ----

local VERSION = 3

-- {3, {mt[0], ..., mt[623], index}, gauss_next}: Python's (3, tuple_of_625, gauss_next)
function Random:getstate()
  local internal = table.move(self._mt, 1, N, 1, {})
  internal[N + 1] = self._index
  return { VERSION, internal, self.gauss_next }
end

function Random:setstate(state)
  if type(state) ~= "table" then U.errorf("state must be a table, got %s", U.typename(state)) end
  if state[1] ~= VERSION then
    U.errorf("state with version %s passed to Random.setstate() of version %d", tostring(state[1]), VERSION)
  end
  local internal = state[2]
  if type(internal) ~= "table" or #internal ~= N + 1 then U.error("state vector is the wrong size") end
  local index = internal[N + 1]
  if math.type(index) ~= "integer" or index < 0 or index > N then U.error("invalid state") end
  for i = 1, N do
    if math.type(internal[i]) ~= "integer" then U.error("state vector items must be integers") end
    self._mt[i] = internal[i] & MASK
  end
  self._index = index
  self.gauss_next = state[3]
end

-- ---- integers ----

function Random:getrandbits(k)
  if math.type(k) ~= "integer" then U.errorf("'%s' object cannot be interpreted as an integer", U.typename(k)) end
  if k < 0 then U.error("number of bits must be non-negative") end
  if k > 63 then U.errorf("getrandbits(%d): more than 63 bits do not fit a Lua integer", k) end
  if k == 0 then return 0 end
  if k <= 32 then return genrand(self) >> (32 - k) end
  local lo = genrand(self)
  return lo | ((genrand(self) >> (64 - k)) << 32)
end

local function bit_length(n)
  local k = 0
  while n > 0 do n = n >> 1; k = k + 1 end
  return k
end

-- a uniform int in [0, n), n > 0: getrandbits(n.bit_length()) until one falls below n
local function randbelow(self, n)
  local k = bit_length(n)
  local r = self:getrandbits(k)
  while r >= n do r = self:getrandbits(k) end
  return r
end
Random._randbelow = randbelow

-- Python's operator.index: ints, and Lua floats holding an int (Lua's `/` makes floats)
local function index(v)
  local i = math.tointeger(v)
  if i == nil then U.errorf("'%s' object cannot be interpreted as an integer", U.typename(v)) end
  return i
end

local function show(v) return math.type(v) == "float" and U.pyfloat(v) or tostring(v) end

function Random:randrange(start, stop, step)
  local istart = index(start)
  if stop == nil then
    if step ~= nil then U.error("Missing a non-None stop argument") end
    if istart > 0 then return randbelow(self, istart) end
    U.errorf("empty range in randrange(%s)", show(start))
  end
  local istop = index(stop)
  local width = istop - istart
  local istep = step == nil and 1 or index(step)
  if istep == 1 then
    if width > 0 then return istart + randbelow(self, width) end
    if step == nil then U.errorf("empty range in randrange(%s, %s)", show(start), show(stop)) end
    U.errorf("empty range in randrange(%s, %s, %s)", show(start), show(stop), show(step))
  end
  local n
  if istep > 0 then
    n = (width + istep - 1) // istep
  elseif istep < 0 then
    n = (width + istep + 1) // istep
  else
    U.error("zero step for randrange()")
  end
  if n <= 0 then U.errorf("empty range in randrange(%s, %s, %s)", show(start), show(stop), show(step)) end
  return istart + istep * randbelow(self, n)
end

function Random:randint(a, b)
  return self:randrange(a, index(b) + 1)
end

-- ---- sequences (Lua lists and strings; x[1] is Python's x[0]) ----

local function seq_len(fname, seq)
  if type(seq) == "string" or type(seq) == "table" then return #seq end
  U.errorf("%s: population must be a sequence (a Lua list or string), got %s", fname, U.typename(seq))
end

-- element i (0-based) of a list or string
local function item(seq, i)
  if type(seq) == "string" then return seq:sub(i + 1, i + 1) end
  return seq[i + 1]
end

function Random:choice(seq)
  local n = seq_len("choice", seq)
  if n == 0 then U.error("Cannot choose from an empty sequence") end
  return item(seq, randbelow(self, n))
end

function Random:shuffle(x)
  if type(x) ~= "table" then U.errorf("shuffle: expected a Lua list, got %s", U.typename(x)) end
  for i = #x - 1, 1, -1 do
    local j = randbelow(self, i + 1)
    x[i + 1], x[j + 1] = x[j + 1], x[i + 1]
  end
end

-- k distinct positions of 0..n-1 as CPython picks them: a shrinking pool when n is small
-- against k, else redraws until a position is new
local function sample_positions(self, n, k)
  if k < 0 or k > n then U.error("Sample larger than population or is negative") end
  local out = {}
  local setsize = 21
  if k > 5 then setsize = setsize + 4 ^ math.ceil(math.log(k * 3, 4)) end
  if n <= setsize then
    local pool = {}
    for i = 0, n - 1 do pool[i] = i end
    for i = 0, k - 1 do
      local j = randbelow(self, n - i)
      out[i + 1] = pool[j]
      pool[j] = pool[n - i - 1]
    end
  else
    local selected = {}
    for i = 1, k do
      local j = randbelow(self, n)
      while selected[j] do j = randbelow(self, n) end
      selected[j] = true
      out[i] = j
    end
  end
  return out
end

local function bisect_right(a, x, lo, hi) -- a 1-based, lo and hi 0-based as Python's
  while lo < hi do
    local mid = (lo + hi) // 2
    if x < a[mid + 1] then hi = mid else lo = mid + 1 end
  end
  return lo
end

-- sample(population, k, {counts = list}): a list of k distinct picks
function Random:sample(population, ...)
  local o = U.parse("sample", { { "k", U.REQUIRED }, { "counts", nil } }, ...)
  local n = seq_len("sample", population)
  local k = index(o.k)
  if o.counts ~= nil then
    local cum, total = {}, 0
    for i, c in ipairs(o.counts) do total = total + c; cum[i] = total end
    if #cum ~= n then U.error("The number of counts does not match the population") end
    if math.type(total) ~= "integer" then U.error("Counts must be integers") end
    if total <= 0 then U.error("Total of counts must be greater than zero") end
    local out = {}
    for i, s in ipairs(sample_positions(self, total, k)) do out[i] = item(population, bisect_right(cum, s, 0, n - 1)) end
    return out
  end
  local out = sample_positions(self, n, k)
  for i, j in ipairs(out) do out[i] = item(population, j) end
  return out
end

-- choices(population, weights, k) or choices(population, {weights =, cum_weights =, k =}):
-- k picks with replacement
function Random:choices(population, ...)
  local o = U.parse("choices", { { "weights", nil }, { "k", 1 }, { "cum_weights", nil } }, ...)
  local n = seq_len("choices", population)
  local k = index(o.k)
  local out = {}
  local cum = o.cum_weights
  if cum == nil then
    if o.weights == nil then
      local nf = n + 0.0
      for i = 1, k do
        local j = math.floor(self:random() * nf)
        if j >= n then U.error("list index out of range") end -- an empty population
        out[i] = item(population, j)
      end
      return out
    end
    cum = {}
    local total = 0
    for i, w in ipairs(o.weights) do
      if type(w) ~= "number" then U.errorf("unsupported operand type(s) for +: 'int' and '%s'", U.typename(w)) end
      total = total + w; cum[i] = total
    end
  elseif o.weights ~= nil then
    U.error("Cannot specify both weights and cumulative weights")
  end
  if #cum ~= n then U.error("The number of weights does not match the population") end
  if n == 0 then U.error("list index out of range") end
  local total = cum[n] + 0.0
  if not (total > 0.0) and total == total then U.error("Total of weights must be greater than zero") end
  if total ~= total or total == math.huge or total == -math.huge then U.error("Total of weights must be finite") end
  for i = 1, k do out[i] = item(population, bisect_right(cum, self:random() * total, 0, n - 1)) end
  return out
end

-- ---- floats ----

function Random:random()
  local a, b = genrand(self) >> 5, genrand(self) >> 6
  return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0)
end

function Random:uniform(a, b)
  return a + (b - a) * self:random()
end

function Random:gauss(mu, sigma)
  mu, sigma = mu or 0.0, sigma or 1.0
  local z = self.gauss_next
  self.gauss_next = nil
  if z == nil then
    local x2pi = self:random() * (2 * math.pi)
    local g2rad = math.sqrt(-2.0 * math.log(1.0 - self:random()))
    z = math.cos(x2pi) * g2rad
    self.gauss_next = math.sin(x2pi) * g2rad
  end
  return mu + z * sigma
end

local NV_MAGICCONST = 4 * math.exp(-0.5) / math.sqrt(2.0)

-- Kinderman and Monahan's ratio-of-uniforms method, as CPython's
function Random:normalvariate(mu, sigma)
  mu, sigma = mu or 0.0, sigma or 1.0
  local z
  while true do
    local u1 = self:random()
    local u2 = 1.0 - self:random()
    z = NV_MAGICCONST * (u1 - 0.5) / u2
    if z * z / 4.0 <= -math.log(u2) then break end
  end
  return mu + z * sigma
end

function Random:lognormvariate(mu, sigma)
  return math.exp(self:normalvariate(mu, sigma))
end

function Random:expovariate(lambd)
  return -math.log(1.0 - self:random()) / (lambd or 1.0)
end

function Random:triangular(low, high, mode)
  low, high = low or 0.0, high or 1.0
  local u = self:random()
  local c = 0.5
  if mode ~= nil then
    if high - low == 0 then return low end
    c = (mode - low) / (high - low)
  end
  if u > c then
    u, c = 1.0 - u, 1.0 - c
    low, high = high, low
  end
  return low + (high - low) * math.sqrt(u * c)
end

function Random:paretovariate(alpha)
  return (1.0 - self:random()) ^ (-1.0 / alpha)
end

function Random:weibullvariate(alpha, beta)
  return alpha * (-math.log(1.0 - self:random())) ^ (1.0 / beta)
end

-- ---- the module: Random, bigint, and every method bound to one hidden instance ----

local inst = Random()
local module = { Random = Random, bigint = bigint, _inst = inst }
for name, f in pairs(Random) do
  if type(f) == "function" and not name:match("^_") then
    module[name] = function(...) return f(inst, ...) end
  end
end
return module
