-- torch.save / torch.load: the bytes in the file for every dtype (checked
-- against string.pack of the values, non-contiguous inputs too), PyTorch's key
-- names, plain values and nested tables round-tripping with their Lua types, a
-- model + optimizer + scheduler checkpoint that continues training identically,
-- files in safetensors.torch's layout, map_location, and clear errors.
local T = ...
local U = require "nn_util"

local dir = os.tmpname()
os.remove(dir)
torch._io.makedirs(dir)
local function path(name) return dir .. "/" .. name end

local function read_all(p)
  local f = assert(io.open(p, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

local function write_all(p, s)
  local f = assert(io.open(p, "wb"))
  f:write(s)
  f:close()
end

-- header length, header text and the data section of a file we wrote
local function parse_file(p)
  local s = read_all(p)
  local n = string.unpack("<I8", s)
  return n, s:sub(9, 8 + n), s:sub(9 + n)
end

-- the entry of tensor `name` in a compact header: dtype, shape text, begin, end
local function entry(header, name)
  local esc = name:gsub("%p", "%%%0")
  local dtype, shape, b, e = header:match('"' .. esc .. '":{"dtype":"(%w+)","shape":%[([%d,]*)%],"data_offsets":%[(%d+),(%d+)%]}')
  return dtype, shape, tonumber(b), tonumber(e)
end

-- IEEE half bits of an exactly representable number
local function half_bits(x)
  local sign = (x < 0 or 1 / x < 0) and 0x8000 or 0
  x = math.abs(x)
  if x == math.huge then return sign | 0x7C00 end
  if x == 0 then return sign end
  if x < 2 ^ -14 then return sign | math.tointeger(x / 2 ^ -24) end
  local e = 0
  while x >= 2 ^ (e + 1) do e = e + 1 end
  while x < 2 ^ e do e = e - 1 end
  return sign | ((e + 15) << 10) | math.tointeger((x / 2 ^ e - 1) * 1024)
end

local PACK = {
  float64 = function(v) return string.pack("<d", v) end,
  float32 = function(v) return string.pack("<f", v) end,
  float16 = function(v) return string.pack("<I2", half_bits(v)) end,
  bfloat16 = function(v) return string.pack("<f", v):sub(3, 4) end,
  int64 = function(v) return string.pack("<i8", v) end,
  int32 = function(v) return string.pack("<i4", v) end,
  int16 = function(v) return string.pack("<i2", v) end,
  int8 = function(v) return string.pack("b", v) end,
  uint8 = function(v) return string.pack("B", v) end,
  bool = function(v) return string.pack("B", v and 1 or 0) end,
}
local ST_NAME = { float64 = "F64", float32 = "F32", float16 = "F16", bfloat16 = "BF16", int64 = "I64", int32 = "I32",
  int16 = "I16", int8 = "I8", uint8 = "U8", bool = "BOOL" }

-- 2 x 3 values per dtype, all exact in that dtype (specials included)
local VALUES = {
  float64 = { { 0.1, -0.0, math.huge }, { -math.huge, 5e-324, -1.7976931348623157e308 } },
  float32 = { { 0.5, -0.0, math.huge }, { -3.25, 2 ^ -149, 3.4028234663852886e38 } },
  float16 = { { 0.5, -0.0, math.huge }, { 65504.0, 2 ^ -24, -2 ^ -14 } },
  bfloat16 = { { 0.5, -0.0, -math.huge }, { 3.0, 2 ^ -133, 1.0 + 2 ^ -7 } },
  int64 = { { math.maxinteger, math.mininteger, 0 }, { -1, 1 << 40, 7 } },
  int32 = { { 2147483647, -2147483648, 0 }, { -1, 65536, 7 } },
  int16 = { { 32767, -32768, 0 }, { -1, 256, 7 } },
  int8 = { { 127, -128, 0 }, { -1, 64, 7 } },
  uint8 = { { 0, 255, 128 }, { 1, 2, 254 } },
  bool = { { true, false, true }, { false, false, true } },
}

local function same_value(a, b)
  if type(a) == "number" and type(b) == "number" then
    if a ~= a then return b ~= b end
    return string.format("%a", a) == string.format("%a", b) -- tells -0.0 from 0.0
  end
  return a == b
end

local function same_list(a, b)
  if type(a) ~= "table" then return same_value(a, b) end
  if type(b) ~= "table" or #a ~= #b then return false end
  for i = 1, #a do if not same_list(a[i], b[i]) then return false end end
  return true
end

T.test("every dtype: file bytes and round trip, contiguous and not", function()
  for dtname, rows in pairs(VALUES) do
    local dt = torch[dtname]
    local base = torch.tensor(rows, { dtype = dt })
    local tr = base:t() -- 3 x 2, not contiguous
    T.check(not tr:is_contiguous())
    local p = path("dtype_" .. dtname .. ".safetensors")
    torch.save({ a = base, b = tr, s = base[1][2], e = base:narrow(1, 0, 0) }, p)
    local _, header, data = parse_file(p)
    -- expected bytes from the Lua values, row-major
    local want_a, want_b = {}, {}
    for i = 1, 2 do for j = 1, 3 do want_a[#want_a + 1] = PACK[dtname](rows[i][j]) end end
    for j = 1, 3 do for i = 1, 2 do want_b[#want_b + 1] = PACK[dtname](rows[i][j]) end end
    local dta, shapea, ba, ea = entry(header, "a")
    local dtb, shapeb, bb, eb = entry(header, "b")
    local dts, shapes, bs, es = entry(header, "s")
    local dte, shapee, be, ee = entry(header, "e")
    T.eq(dta, ST_NAME[dtname], dtname .. " dtype")
    T.eq({ shapea, shapeb, shapes, shapee }, { "2,3", "3,2", "", "2,0" }, dtname .. " shapes")
    T.check(dtb == dta and dts == dta and dte == dta)
    T.check(data:sub(ba + 1, ea) == table.concat(want_a), dtname .. ": bytes of a")
    T.check(data:sub(bb + 1, eb) == table.concat(want_b), dtname .. ": bytes of the transposed b")
    T.check(data:sub(bs + 1, es) == PACK[dtname](rows[2][3]), dtname .. ": bytes of the 0-dim s")
    T.check(ee == be, dtname .. ": empty e holds no bytes")
    local back = torch.load(p)
    T.check(back.a.dtype == dt and back.b.dtype == dt and back.b:is_contiguous(), dtname .. " dtypes")
    T.check(same_list(back.a:tolist(), rows), dtname .. ": values of a")
    T.check(same_list(back.b:tolist(), tr:tolist()), dtname .. ": values of b")
    T.check(same_list(back.s:item(), rows[2][3]) and back.s:dim() == 0, dtname .. ": 0-dim")
    T.eq(back.e.shape:totable(), { 2, 0 }, dtname .. ": empty shape")
  end
end)

T.test("NaN and a lone tensor", function()
  local p = path("nan.safetensors")
  local x = torch.tensor({ 0 / 0, 1, -0 / 0 })
  torch.save(x, p)
  local _, header = parse_file(p)
  T.check(entry(header, "tensor") == "F32", "a tensor saved alone is named 'tensor'")
  local y = torch.load(p)
  T.check(torch.is_tensor(y))
  local v = y:tolist()
  T.check(v[1] ~= v[1] and v[2] == 1 and v[3] ~= v[3])
end)

T.test("state_dict keys as PyTorch names them; nested paths", function()
  local model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
  local sd = model:state_dict()
  local p = path("sd.pth")
  torch.save(sd, p)
  local _, header = parse_file(p)
  for _, k in ipairs({ "0.weight", "0.bias", "2.weight", "2.bias" }) do
    T.check(entry(header, k) == "F32", "entry " .. k)
  end
  T.check(header:find('"__metadata__":{"format":"pt","nnrepl":', 1, true) ~= nil, "metadata")
  local back = torch.load(p)
  T.check(U.OrderedDict.is(back), "an OrderedDict")
  T.eq(back:keys(), sd:keys(), "order")
  local m2 = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
  m2:load_state_dict(back)
  local x = torch.randn(5, 3)
  T.check(same_list(m2(x):tolist(), model(x):tolist()), "same outputs")

  torch.save({ model = sd, list = { torch.ones(1), torch.zeros(2) }, [0] = { w = torch.ones(3) } }, p)
  _, header = parse_file(p)
  T.check(entry(header, "model.0.weight") == "F32" and entry(header, "list.0") == "F32" and entry(header, "list.1") == "F32"
    and entry(header, "0.w") == "F32", header)
end)

T.test("plain values keep their Lua types", function()
  local OD = U.OrderedDict
  local od = OD.new({ { "z", 1 }, { "a", 2 }, { "m", torch.ones(2) } })
  local obj = {
    int = 3, float = 3.0, small = 1e-8, big = 2 ^ 70, neg = -0.5, inf = math.huge, ninf = -math.huge, nan = 0 / 0,
    maxint = math.maxinteger, s = 'quote " back \\ nl \n unicode é €', bin = "\255\0\1", yes = true, no = false,
    list = { 1, 2.5, "x", { true } }, empty = {}, sparse = { [1] = "a", [3] = "c" }, ints = { [0] = "zero", [-1] = "m" },
    mixed = { 1, 2, x = "y" }, dollar = { ["$tensor"] = "not a tensor" }, od = od,
    dtype = torch.float16, device = torch.device("cpu"), size = torch.Size({ 2, 3 }),
  }
  local p = path("values.pth")
  torch.save(obj, p)
  local b = torch.load(p)
  T.check(math.type(b.int) == "integer" and b.int == 3)
  T.check(math.type(b.float) == "float" and b.float == 3.0)
  T.check(b.small == 1e-8 and b.big == 2 ^ 70 and b.neg == -0.5 and b.maxint == math.maxinteger)
  T.check(b.inf == math.huge and b.ninf == -math.huge and b.nan ~= b.nan)
  T.eq(b.s, obj.s)
  T.eq(b.bin, obj.bin)
  T.check(b.yes == true and b.no == false)
  T.check(b.list[1] == 1 and math.type(b.list[1]) == "integer" and b.list[2] == 2.5 and b.list[3] == "x" and b.list[4][1] == true)
  T.check(type(b.empty) == "table" and next(b.empty) == nil)
  T.check(b.sparse[1] == "a" and b.sparse[3] == "c" and b.sparse[2] == nil)
  T.check(b.ints[0] == "zero" and b.ints[-1] == "m")
  T.check(b.mixed[1] == 1 and b.mixed[2] == 2 and b.mixed.x == "y")
  T.check(b.dollar["$tensor"] == "not a tensor")
  T.check(OD.is(b.od))
  T.eq(b.od:keys(), { "z", "a", "m" })
  T.check(torch.is_tensor(b.od.m))
  T.check(b.dtype == torch.float16 and tostring(b.device) == "cpu" and tostring(b.size) == "torch.Size([2, 3])")
end)

T.test("the same tensor twice is stored once and comes back as one object", function()
  local w = torch.randn(3)
  local p = path("shared.pth")
  torch.save({ a = w, b = w, c = w:clone() }, p)
  local _, header = parse_file(p)
  T.check(entry(header, "a") and not entry(header, "b") and entry(header, "c"))
  local back = torch.load(p)
  T.check(rawequal(back.a, back.b) and not rawequal(back.a, back.c))
end)

T.test("colliding flattened names get a suffix", function()
  local p = path("collide.pth")
  torch.save({ ["a.b"] = torch.ones(1), a = { b = torch.zeros(1) } }, p)
  local back = torch.load(p)
  T.eq(back["a.b"]:tolist(), { 1.0 })
  T.eq(back.a.b:tolist(), { 0.0 })
end)

T.test("requires_grad comes back", function()
  local p = path("grad.pth")
  local w = torch.randn(2):requires_grad_()
  torch.save({ w = w }, p)
  T.check(torch.load(p).w.requires_grad == true)
end)

-- ---- training continues identically ----

local function continue_training(make_opt, make_sched, sched_step)
  torch.manual_seed(7)
  local X, Y = torch.randn(16, 4), torch.randn(16, 2)
  local function make() return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)) end
  local function step(model, opt, sched)
    opt:zero_grad()
    local loss = F.mse_loss(model(X), Y)
    loss:backward()
    opt:step()
    local l = loss:item()
    sched_step(sched, l)
    return l
  end
  local A = make()
  local optA = make_opt(A)
  local schA = make_sched(optA)
  for _ = 1, 3 do step(A, optA, schA) end
  local p = path("ckpt.pth")
  torch.save({ model = A:state_dict(), optimizer = optA:state_dict(), scheduler = schA:state_dict(), epoch = 3 }, p)
  local lossesA = {}
  for i = 1, 5 do lossesA[i] = step(A, optA, schA) end

  torch.manual_seed(99) -- a different initialisation
  local B = make()
  local optB = make_opt(B)
  local schB = make_sched(optB)
  local ck = torch.load(p, { map_location = "cpu" })
  T.eq(ck.epoch, 3)
  B:load_state_dict(ck.model)
  optB:load_state_dict(ck.optimizer)
  schB:load_state_dict(ck.scheduler)
  local lossesB = {}
  for i = 1, 5 do lossesB[i] = step(B, optB, schB) end
  T.eq(lossesB, lossesA, "losses after resuming")
  local pa, pb = A:parameters(), B:parameters()
  for i = 1, #pa do T.check(same_list(pa[i]:tolist(), pb[i]:tolist()), "param " .. i) end
  T.eq(optB.param_groups[1].lr, optA.param_groups[1].lr, "lr")
end

T.test("SGD momentum + StepLR checkpoint resumes identically", function()
  continue_training(function(m) return optim.SGD(m:parameters(), { lr = 0.1, momentum = 0.9, dampening = 0.1 }) end,
    function(o) return optim.lr_scheduler.StepLR(o, { step_size = 2, gamma = 0.5 }) end,
    function(s) s:step() end)
end)

T.test("Adam + ReduceLROnPlateau checkpoint resumes identically", function()
  continue_training(function(m) return optim.Adam(m:parameters(), { lr = 0.01 }) end,
    function(o) return optim.lr_scheduler.ReduceLROnPlateau(o, { patience = 0, factor = 0.5, threshold = 0.5 }) end,
    function(s, loss) s:step(loss) end)
end)

T.test("GradScaler state round-trips", function()
  local amp = torch.amp or (torch.cuda and torch.cuda.amp)
  if not (amp and amp.GradScaler) then T.check(true); return end
  local s = amp.GradScaler()
  local p = path("scaler.pth")
  torch.save({ scaler = s:state_dict() }, p)
  local back = torch.load(p).scaler
  for k, v in pairs(s:state_dict()) do
    if not torch.is_tensor(v) then T.check(same_value(back[k], v), "scaler " .. k) end
  end
end)

-- ---- files written by safetensors.torch ----

-- a header and data as the reference writer lays them out (sorted, packed, padded)
local function reference_file(p, entries, meta)
  local parts, data, off = {}, {}, 0
  if meta then parts[#parts + 1] = '"__metadata__":' .. meta end
  for _, e in ipairs(entries) do
    parts[#parts + 1] = string.format('"%s":{"dtype":"%s","shape":[%s],"data_offsets":[%d,%d]}', e[1], e[2],
      table.concat(e[3], ","), off, off + #e[4])
    data[#data + 1] = e[4]
    off = off + #e[4]
  end
  local h = "{" .. table.concat(parts, ",") .. "}"
  h = h .. string.rep(" ", (8 - #h % 8) % 8)
  write_all(p, string.pack("<I8", #h) .. h .. table.concat(data))
end

T.test("a file from safetensors.torch loads as an OrderedDict into a model", function()
  local w = { 1.0, 2.0, 3.0, 4.0, 5.0, 6.0 }
  local wb = {}
  for i, v in ipairs(w) do wb[i] = string.pack("<f", v) end
  local p = path("ref.safetensors")
  reference_file(p, {
    { "bias", "F32", { 2 }, string.pack("<ff", 0.5, -0.5) },
    { "weight", "F32", { 2, 3 }, table.concat(wb) },
  }, '{"format":"pt"}')
  local sd = torch.load(p)
  T.check(U.OrderedDict.is(sd))
  T.eq(sd:keys(), { "bias", "weight" })
  local lin = nn.Linear(3, 2)
  lin:load_state_dict(sd)
  T.eq(lin.weight:tolist(), { { 1.0, 2.0, 3.0 }, { 4.0, 5.0, 6.0 } })
  T.eq(lin(torch.ones(1, 3)):tolist(), { { 6.5, 14.5 } })
  T.check(torch.load(p, "cpu").weight ~= nil, "positional map_location")
end)

-- ---- map_location ----

T.test("map_location", function()
  local p = path("map.pth")
  torch.save({ w = torch.ones(2) }, p)
  T.check(torch.load(p, { map_location = torch.device("cpu") }).w.device.type == "cpu")
  local seen
  local b = torch.load(p, { map_location = function(t, loc) seen = loc; return t * 2 end })
  T.eq(seen, "cpu")
  T.eq(b.w:tolist(), { 2.0, 2.0 })
  T.check(torch.load(p, { map_location = { ["cuda:0"] = "cpu" } }).w.device.type == "cpu")
  -- a checkpoint saved from a GPU
  local meta = '{"$table":[["w",{"$tensor":"w","device":"cuda:0"}]]}'
  torch._io.save(p, { "w" }, { torch.ones(2) }, { "format", "nnrepl" }, { "pt", meta })
  if not torch.cuda.is_available() then
    T.raises(function() torch.load(p) end, "~Attempting to deserialize object on a CUDA device")
  end
  T.check(torch.load(p, { map_location = "cpu" }).w.device.type == "cpu")
  T.check(torch.load(p, { map_location = { ["cuda:0"] = "cpu" } }).w.device.type == "cpu")
  T.raises(function() torch.load(p, { map_location = "cpu", mmap = false, bogus = 1 }) end, "~unknown keyword 'bogus'")
  T.check(torch.load(p, { map_location = "cpu", weights_only = true }).w ~= nil)
end)

-- ---- errors ----

T.test("truncated, corrupt and oversized-header files raise clear errors", function()
  local p = path("good.pth")
  torch.save({ w = torch.randn(4, 4), n = 3 }, p)
  local full = read_all(p)
  local bad = path("bad.pth")
  for _, cut in ipairs({ 0, 4, 8, 20, #full - 40, #full - 1 }) do
    write_all(bad, full:sub(1, cut))
    T.raises(function() torch.load(bad) end, "~bad.pth", "cut at " .. cut)
    local err = T.errmsg(function() torch.load(bad) end)
    T.check(err and err:find("^torch%.load: ") and (err:find("truncated") or err:find("fewer than")), err)
  end
  write_all(bad, string.pack("<I8", 1 << 40) .. "{}")
  T.raises(function() torch.load(bad) end, "~header length 1099511627776 is larger than the rest of the file")
  write_all(bad, string.pack("<I8", 6) .. '{"a":}')
  T.raises(function() torch.load(bad) end, "~is not a valid safetensors file")
  -- damaged skeleton metadata
  local n, header, data = parse_file(p)
  local broken = header:gsub('"nnrepl":"', '"nnrepl":"[', 1)
  broken = broken:sub(1, n)
  write_all(bad, string.pack("<I8", #broken) .. broken .. data)
  T.raises(function() torch.load(bad) end, "~bad checkpoint metadata")
  T.raises(function() torch.load(path("missing.pth")) end, "~No such file or directory")
  write_all(bad, "PK\3\4" .. string.rep("\0", 60))
  T.raises(function() torch.load(bad) end, "~not a zip archive (no end of central directory)")
end)

T.test("unsupported values and bad paths", function()
  T.raises(function() torch.save({ f = print }, path("x.pth")) end, "torch.save: cannot save 'f': a function that is not one of torch's own (torch.*, torch.nn.functional.*) cannot be stored by name")
  T.raises(function() torch.save({ c = coroutine.create(print) }, path("x.pth")) end, "torch.save: cannot save 'c': values of type thread are not supported")
  local cyc = {}
  cyc.self = cyc
  T.raises(function() torch.save(cyc, path("x.pth")) end, "torch.save: 'self' contains itself")
  T.raises(function() torch.save({}, 3) end, "~file path expected")
  local target = path("nodir/x.pth")
  T.raises(function() torch.save({ w = torch.ones(1) }, target) end, "~cannot save '" .. target .. "': No such file or directory")
  T.check(io.open(target) == nil)
  -- a failed save leaves the previous checkpoint as it was
  local keep = path("keep.pth")
  torch.save({ w = torch.ones(1) }, keep)
  local before = read_all(keep)
  T.raises(function() torch.save({ w = torch.zeros(1), f = print }, keep) end, "~cannot be stored by name")
  T.check(read_all(keep) == before)
  local listing = io.popen('ls -a "' .. dir .. '"')
  local leftovers = 0
  for name in listing:lines() do if name:find("%.tmp") then leftovers = leftovers + 1 end end
  listing:close()
  T.eq(leftovers, 0, "temporary files left")
end)

os.execute('rm -rf "' .. dir .. '"')
