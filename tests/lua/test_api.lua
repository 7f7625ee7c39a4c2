-- The library surface: keyword tables, error formats, <close>, fields, printing,
-- item/tolist, torch.Tensor(), print options and the time module.
local T = ...

T.test("unknown keywords name the key", function()
  T.raises(function() torch.zeros(2, {dtyp = torch.float32}) end, "bad argument #2 to 'zeros' (unknown keyword 'dtyp')")
  T.raises(function() torch.tensor({1}, {device = "cpu", grad = true}) end, "bad argument #2 to 'tensor' (unknown keyword 'grad')")
  T.raises(function() torch.randn(2, 2, {std = 1}) end, "bad argument #3 to 'randn' (unknown keyword 'std')")
  T.raises(function() torch.arange(5, {step = 2}) end, "bad argument #2 to 'arange' (unknown keyword 'step')")
  T.raises(function() torch.ones(2):sum({axis = 0}) end, "bad argument #1 to 'sum' (unknown keyword 'axis')")
  T.raises(function() torch.ones(2):to({dtype = torch.float64, nonblocking = true}) end, "bad argument #1 to 'to' (unknown keyword 'nonblocking')")
  T.raises(function() torch.set_printoptions({precison = 2}) end, "bad argument #1 to 'set_printoptions' (unknown keyword 'precison')")
  T.raises(function() torch.zeros_like(torch.ones(1), {shape = 1}) end, "bad argument #2 to 'zeros_like' (unknown keyword 'shape')")
end)

T.test("error formats", function()
  local x = torch.zeros(3)
  T.raises(function() return x + torch.zeros(4) end,
    "bad argument #2 to 'add' (the size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 0)")
  T.raises(function() x:add("a") end, "bad argument #1 to 'add' (tensor or number expected, got string)")
  T.raises(function() torch.add("a", x) end, "bad argument #1 to 'add' (tensor or number expected, got string)")
  T.raises(function() torch.sum(5) end, "bad argument #1 to 'sum' (tensor expected, got number)")
  T.raises(function() torch.relu(torch.Size({2})) end, "bad argument #1 to 'relu' (tensor expected, got torch.Size)")
  T.raises(function() torch.zeros(2):view(3) end, "bad argument #1 to 'view' (shape '[3]' is invalid for input of size 2)")
  T.raises(function() torch.zeros(2):item() end, "a Tensor with 2 elements cannot be converted to Scalar")
  T.raises(function() torch.ones(2, {dtype = torch.int64}):requires_grad_() end, "~")
end)

T.test("host memory of dead tensors is reused", function()
  local f = io.open("/proc/self/statm")
  if not f or os.getenv("NNREPL_SANITIZED") then -- the sanitizers' allocator holds freed memory on purpose
    if f then f:close() end
    return T.skip("needs /proc and glibc's allocator", 1)
  end
  f:close()
  local function rss_mb()
    local g = io.open("/proc/self/statm")
    local pages = g:read("n") and g:read("n")
    g:close()
    return pages * 4096 / 2 ^ 20
  end
  -- 64-byte aligned blocks once came from aligned_alloc, whose freed chunks glibc 2.36 did not
  -- hand out again: this loop grew by about 0.7 MB a step with 1 MB tensors and a few alive
  local a, b = torch.rand(262144), torch.rand(262144)
  local c
  for _ = 1, 100 do c = a + b end
  local before = rss_mb()
  for _ = 1, 2000 do c = a + b end
  T.check(rss_mb() < before + 256, string.format("2000 dead 1 MB results grew the process by %.0f MB", rss_mb() - before))
  T.eq(c:numel(), 262144)
end)

T.test("<close> releases at once", function()
  local function rss_mb()
    local f = io.open("/proc/self/statm")
    if not f then return nil end
    local pages = f:read("n") and f:read("n")
    f:close()
    return pages * 4096 / 2 ^ 20
  end
  local escaped
  local before = rss_mb()
  do
    local big <close> = torch.ones(64, 1024, 1024) -- 256 MiB
    escaped = big
    T.eq(big:numel(), 64 * 1024 * 1024, "usable inside the block")
  end
  if before then T.check(rss_mb() < before + 64, "memory returned when the block ends") end
  T.raises(function() return escaped:sum() end, "attempt to use a closed tensor")
  T.raises(function() return escaped + 1 end, "attempt to use a closed tensor")
  T.raises(function() return tostring(escaped) end, "attempt to use a closed tensor")
  T.raises(function() return escaped.shape end, "attempt to use a closed tensor")
  local v
  do
    local base <close> = torch.arange(4)
    v = base:view(2, 2)
  end
  T.eq(v:tolist(), {{0, 1}, {2, 3}}, "a view outlives its closed base")
  local f = io.open("/proc/self/statm") and true
  if f then
    local start = rss_mb()
    for _ = 1, 40 do local t = torch.ones(1024, 1024, 8); t:add_(1) end -- 32 MiB each, no <close>
    T.check(rss_mb() < start + 600, "garbage tensors are collected at the pace they are made")
  end
end)

T.test("fields", function()
  local x = torch.zeros(2, 3)
  T.eq(x.ndim, 2, "ndim")
  T.check(x.is_leaf, "a new tensor is a leaf")
  T.check(not x.requires_grad, "requires_grad false by default")
  x.requires_grad = true
  T.check(x.requires_grad, "requires_grad set")
  T.eq(x.grad, nil, "no grad yet")
  x.grad = torch.ones(2, 3)
  T.eq(x.grad:tolist(), {{1.0, 1.0, 1.0}, {1.0, 1.0, 1.0}}, "grad assigned")
  x.grad = nil
  T.eq(x.grad, nil, "grad cleared")
  T.raises(function() x.grad = torch.ones(3) end, "assigned grad has data of a different size ([3], expected [2, 3])")
  T.raises(function() x.grad = torch.ones(2, 3, {dtype = torch.float64}) end,
    "assigned grad has data of a different type (float64, expected float32)")
  T.raises(function() x.requires_grad = 1 end, "~boolean expected")
  local i = torch.zeros(2, {dtype = torch.int64})
  T.raises(function() i.requires_grad = true end, "~floating point")
  local d = x.data
  T.check(not d.requires_grad, "data does not require grad")
  d[0][0] = 5
  T.eq(x[0][0]:item(), 5.0, "data shares storage")
  local y = torch.zeros(2)
  y.data = torch.ones(4)
  T.eq(y:tolist(), {1.0, 1.0, 1.0, 1.0}, "assigning data replaces the storage")
  T.eq(torch.arange(6):view(2, 3).T.shape:totable(), {3, 2}, "T")
end)

T.test("item and tolist against plain Lua", function()
  local n, m = 3, 5
  local x = torch.arange(n * m):view(n, m)
  local want = {}
  for i = 0, n - 1 do
    want[i + 1] = {}
    for j = 0, m - 1 do want[i + 1][j + 1] = i * m + j end
  end
  T.eq(x:tolist(), want, "tolist of arange")
  local wt = {}
  for j = 1, m do wt[j] = {} for i = 1, n do wt[j][i] = want[i][j] end end
  T.eq(x:t():tolist(), wt, "tolist of a transposed view")
  for i = 0, n - 1 do
    for j = 0, m - 1 do
      if x[i][j]:item() ~= want[i + 1][j + 1] then T.check(false, "item at " .. i .. "," .. j) end
    end
  end
  T.check(true, "every item")
  T.eq(math.type(x[0][0]:item()), "integer", "item of int64 is an integer")
  T.eq(math.type(x:float()[0][0]:item()), "float", "item of float32 is a float")
  T.eq(torch.tensor({true})[0]:item(), true, "item of bool is a boolean")
  T.eq(torch.tensor({{7}}):item(), 7, "item of a one-element 2-D tensor")
  T.eq(torch.tensor({0.1}, {dtype = torch.float64}):item(), 0.1, "float64 item is exact")
  T.eq(torch.tensor({0.1}):item(), string.unpack("f", string.pack("f", 0.1)), "float32 item is the float32 value")
  T.eq(torch.tensor({1.5}, {dtype = torch.float16}):tolist(), {1.5}, "half tolist")
end)

T.test("printing", function()
  T.eq(tostring(torch.arange(6):view(2, 3):float() * 2), "tensor([[ 0.,  2.,  4.],\n        [ 6.,  8., 10.]])", "float matrix")
  T.eq(tostring(torch.tensor({1, 2, 3})), "tensor([1, 2, 3])", "int vector")
  T.eq(tostring(torch.zeros(2, {dtype = torch.float64})), "tensor([0., 0.], dtype=torch.float64)", "float64 suffix")
  T.eq(tostring(torch.tensor({1.5, 2.25})), "tensor([1.5000, 2.2500])", "four decimals")
  T.eq(tostring(torch.tensor(3.5)), "tensor(3.5000)", "0-dim")
  T.eq(tostring(torch.tensor({true, false})), "tensor([ True, False])", "bool")
  T.eq(tostring(torch.tensor({1, 2}, {dtype = torch.int32})), "tensor([1, 2], dtype=torch.int32)", "int32 suffix")
  T.eq(tostring(torch.zeros(0)), "tensor([])", "empty")
  T.eq(tostring(torch.ones(2, {requires_grad = true})), "tensor([1., 1.], requires_grad=True)", "requires_grad suffix")
  torch.set_printoptions({precision = 2})
  T.eq(tostring(torch.tensor({1.2345})), "tensor([1.23])", "precision option")
  torch.set_printoptions({profile = "default"})
  T.eq(tostring(torch.tensor({1.2345})), "tensor([1.2345])", "profile default resets")
  torch.set_printoptions({threshold = 5, edgeitems = 2})
  T.eq(tostring(torch.arange(10)), "tensor([0, 1,  ..., 8, 9])", "threshold and edgeitems (PyTorch pads the ellipsis)")
  torch.set_printoptions({profile = "default"})
  T.eq(tostring(torch.arange(10)), "tensor([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])", "reset")
end)

T.test("torch.Tensor and helpers", function()
  local e = torch.Tensor(2, 3)
  T.eq(e.shape:totable(), {2, 3}, "torch.Tensor(sizes)")
  T.check(e.dtype == torch.float32, "torch.Tensor is float")
  T.eq(torch.Tensor({1, 2}):tolist(), {1.0, 2.0}, "torch.Tensor(data) is float")
  T.check(torch.is_tensor(e) and not torch.is_tensor({}) and not torch.is_tensor(1), "is_tensor")
  function torch.Tensor:double_it() return self * 2 end
  T.eq(torch.tensor({1, 2}):double_it():tolist(), {2, 4}, "user methods on torch.Tensor")
  torch.Tensor.double_it = nil
  T.check(getmetatable(e).__methods == torch.Tensor, "__methods is the method table")
  T.eq(getmetatable(e).__name, "torch.Tensor", "__name")
  T.eq(select("#", torch.manual_seed(1)), 0, "manual_seed returns nothing")
end)

T.test("time module", function()
  T.check(require("time") == time, "require 'time' is the global")
  local t = time.time()
  T.check(math.abs(t - os.time()) < 2, "time() is the wall clock")
  T.eq(math.type(t), "float", "time() is a float")
  local a = time.perf_counter()
  local b = a
  local spins = 0
  while b == a and spins < 1e6 do b = time.perf_counter(); spins = spins + 1 end
  T.check(b > a and b - a < 1e-3, "perf_counter advances in small steps")
  local c = time.time()
  local d = c
  while d == c do d = time.time() end
  T.check(d - c < 1e-5, "time() has sub-10-microsecond steps")
  local s0 = time.perf_counter()
  time.sleep(0.05)
  local slept = time.perf_counter() - s0
  T.check(slept >= 0.05 and slept < 1, "sleep(0.05) sleeps: " .. slept)
  time.sleep(0)
  T.raises(function() time.sleep(-1) end, "bad argument #1 to 'sleep' (sleep length must be non-negative)")
  T.check(math.type(time.perf_counter_ns()) == "integer", "perf_counter_ns is an integer")
end)

T.test("torch.__version__", function()
  -- nnrepl's version, as interp/include/nnrepl.h defines it
  local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
  local f = io.open(here .. "/../../interp/include/nnrepl.h", "r")
  local h = f and f:read("a") or ""
  if f then f:close() end
  local parts = {}
  for _, k in ipairs({"MAJOR", "MINOR", "PATCH"}) do parts[#parts + 1] = h:match("#define NNREPL_VERSION_" .. k .. " (%d+)") end
  T.eq(type(torch.__version__), "string", "a string")
  T.check(torch.__version__:match("^%d+%.%d+%.%d+$") ~= nil, "major.minor.patch: " .. tostring(torch.__version__))
  if #parts == 3 then T.eq(torch.__version__, table.concat(parts, "."), "the header's version") end
end)

T.test("errors from the Lua library name the caller's line", function()
  local function err(f) return select(2, pcall(f)) end
  local params = nn.Linear(2, 2):parameters()
  local cases = {
    err(function() local o = optim.SGD(params, { lr = 0.1, foo = 1 }); return o end),
    err(function() local o = optim.Adam(params, { lr = -1 }); return o end),
    err(function() local m = nn.Linear(2, 3)(torch.randn(4, 5)); return m end),
  }
  if not torch.cuda.is_available() then
    cases[#cases + 1] = err(function() local y = torch.zeros(2):cuda(); return y end)
    cases[#cases + 1] = err(function() local m = nn.Linear(2, 2):cuda(); return m end)
  end
  for i, e in ipairs(cases) do
    T.check(type(e) == "string" and e:find("test_api.lua:%d+: ") and not e:find("bindings/lua/"),
      "case " .. i .. " points at the test: " .. tostring(e))
  end
end)
