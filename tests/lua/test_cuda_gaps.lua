-- torch.cuda gaps: make_graphed_callables (against the same module or function run eagerly:
-- outputs and gradients equal; its restrictions as errors), the sync debug mode, the
-- allocator's snapshot and raw memory, host allocator statistics, NVML readings, external
-- streams, build flags. Without a GPU: the errors PyTorch's CPU build raises, argument checks,
-- and the values that need no GPU.
local T = ...
local cuda = torch.cuda
local nn = torch.nn
local available = cuda.is_available()

T.test("values that need no GPU", function()
  T.eq(cuda.has_half, true)
  T.eq(cuda.has_magma, false)
  T.raises(function() cuda.jiterator._create_jit_fn("template <typename T> T f(T x) { return x; }") end,
    "~torch.cuda.jiterator._create_jit_fn is not supported")
  T.raises(function() cuda.jiterator._create_multi_output_jit_fn("", 2) end, "~_create_multi_output_jit_fn is not supported")
  T.eq(tostring(cuda.CudaError), "<class 'torch.cuda.CudaError'>")
  T.check(cuda.CudaError:matches("CUDA error on cuda:0: an illegal memory access was encountered (x at y:1)"), "a runtime error")
  T.check(not cuda.CudaError:matches("shape mismatch"), "not another error")
  T.check(torch.OutOfMemoryError == cuda.OutOfMemoryError, "one OOM class")
  -- recording allocation history: off is accepted, on is not supported
  cuda.memory._record_memory_history(nil)
  cuda.memory._record_memory_history(false)
  T.raises(function() cuda.memory._record_memory_history("all") end, "~_record_memory_history: recording allocation history")
  T.raises(function() cuda.memory_snapshot({ 0, 1 }) end, "~mempool_id is not supported")
  T.raises(function() cuda.caching_allocator_alloc("10") end, "~size must be an integer, got str")
  T.raises(function() cuda.caching_allocator_alloc(10, { foo = 1 }) end, "~unknown keyword 'foo'")
  T.raises(function() cuda.ExternalStream("0") end, "~stream_ptr must be an integer")
  T.raises(function() cuda.caching_allocator_alloc(10, nil, "s") end, "~invalid type for stream argument")
  T.check(cuda.memory.memory_allocated == cuda.memory_allocated, "torch.cuda.memory holds the memory functions")
  T.raises(function() cuda.MemPool() end, "~torch.cuda.MemPool is not supported")
  T.raises(function() cuda.memory.use_mem_pool() end, "~torch.cuda.use_mem_pool is not supported")
end)

T.test("host memory statistics: PyTorch's keys", function()
  local s = cuda.host_memory_stats()
  for _, k in ipairs({ "allocations", "allocated_bytes", "active_requests", "active_bytes" }) do
    for _, m in ipairs({ "current", "peak", "allocated", "freed" }) do
      T.check(math.type(s[k .. "." .. m]) == "integer" and s[k .. "." .. m] >= 0, k .. "." .. m)
    end
  end
  for _, k in ipairs({ "host_alloc_time", "host_free_time" }) do
    for _, m in ipairs({ "total", "max", "min", "count", "avg" }) do T.check(s[k .. "." .. m] ~= nil, k .. "." .. m) end
  end
  T.check(s.num_host_alloc >= 0 and s.num_host_free >= 0, "counters")
end)

if not available then
  T.test("no GPU: PyTorch's CPU-only errors and values", function()
    local na = "CUDA is not available"
    T.raises(function() cuda.set_sync_debug_mode("warn") end, "~" .. na)
    T.raises(function() cuda.get_sync_debug_mode() end, "~" .. na)
    T.raises(function() cuda.caching_allocator_alloc(100) end, "~" .. na)
    T.raises(function() cuda.caching_allocator_delete(4096) end, "~" .. na)
    T.raises(function() cuda.current_blas_handle() end, "~" .. na)
    T.raises(function() cuda.ExternalStream(0) end, "~" .. na)
    T.raises(function() cuda.get_stream_from_external(0) end, "~" .. na)
    for _, f in ipairs({ "utilization", "memory_usage", "temperature", "power_draw", "clock_rate", "device_memory_used",
      "list_gpu_processes" }) do
      T.raises(function() cuda[f]() end, "~torch.cuda." .. f .. ": " .. na)
    end
    T.eq(cuda.memory_snapshot(), {})
    local snap = cuda.memory._snapshot()
    T.eq(snap.segments, {})
    T.eq(snap.device_traces, {})
    cuda.reset_accumulated_memory_stats()
    cuda.reset_accumulated_host_memory_stats()
    cuda.reset_peak_host_memory_stats()
    T.eq(cuda.host_memory_stats()["allocations.current"], 0)
    -- make_graphed_callables checks its arguments, then needs a GPU
    local f = function(x) return x * 2 end
    T.raises(function() cuda.make_graphed_callables(f, { torch.randn(2) }) end,
      "torch.cuda.make_graphed_callables: " .. na .. " (" ..
      (cuda._is_built() and "no GPU or no driver found" or "this build has no CUDA backend") .. ")")
  end)
end

T.test("make_graphed_callables: argument checks", function()
  local f = function(x) return x * 2 end
  local x = torch.randn(2)
  T.raises(function() cuda.make_graphed_callables(f, { 1 }) end,
    "make_graphed_callables: sample_args for each callable must contain only Tensors; sample_args[1][1] is int")
  T.raises(function() cuda.make_graphed_callables(f, { { x } }) end, "~sample_args[1][1] is table")
  T.raises(function() cuda.make_graphed_callables(f, { x }, { num_warmup_iters = -1 }) end, "~num_warmup_iters")
  T.raises(function() cuda.make_graphed_callables(f, { x }, { foo = 1 }) end, "~unknown keyword 'foo'")
  T.raises(function() cuda.make_graphed_callables(42, { x }) end, "~callables must be a module, a function or a list of them, got int")
  T.raises(function() cuda.make_graphed_callables({ f, f }, { { x } }) end, "~sample_args must hold one list of tensors per callable (2 callables)")
  T.raises(function() cuda.make_graphed_callables({ f, 3 }, { { x }, { x } }) end, "~callables[2] must be a module or a function, got int")
  local m = nn.Linear(2, 2)
  m:register_forward_hook(function() end)
  T.raises(function() cuda.make_graphed_callables(m, { x }) end, "~Modules must not have hooks registered")
  local b = nn.Linear(2, 2)
  b:register_buffer("running", torch.zeros(2, { requires_grad = true }))
  T.raises(function() cuda.make_graphed_callables(b, { x }) end, "~only parameters may be trainable")
  do
    local _ <close> = torch.autocast("cuda", { enabled = true, cache_enabled = true })
    if torch.is_autocast_enabled("cuda") then
      T.raises(function() cuda.make_graphed_callables(f, { x }) end, "~does not support the autocast caching")
    else
      T.skip("autocast needs a GPU here")
    end
  end
end)

if not available then
  T.skip("no GPU: make_graphed_callables, sync debug mode, snapshot, raw memory, host stats, NVML, streams", 10)
  return
end

-- ==================== CUDA ====================
local dev = torch.device("cuda")

local function near(a, b, msg, tol)
  T.near(a:detach():cpu():double():tolist(), b:detach():cpu():double():tolist(), tol or 1e-5, msg)
end

local function mlp(seed)
  torch.manual_seed(seed or 1)
  return nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 4)):to(dev)
end

T.test("make_graphed_callables: a function, outputs and gradients as eager", function()
  local f = function(x, w) return (x:matmul(w)):relu():sum(-1), (x * w:sum()):exp() end
  local sx = torch.randn(8, 5, { device = dev, requires_grad = true })
  local sw = torch.randn(5, 3, { device = dev, requires_grad = true })
  local g = cuda.make_graphed_callables(f, { sx, sw })
  T.check(type(g) == "function", "a function gives a function")
  local ptr
  for i = 1, 3 do
    local x = torch.randn(8, 5, { device = dev, requires_grad = true })
    local w = torch.randn(5, 3, { device = dev, requires_grad = true })
    local a, b = g(x, w)
    if i == 1 then ptr = a:data_ptr() else T.eq(a:data_ptr(), ptr, "the same static output every call") end
    local ex, ew = x:detach():requires_grad_(), w:detach():requires_grad_()
    local ea, eb = f(ex, ew)
    near(a, ea, "output 1, call " .. i)
    near(b, eb, "output 2, call " .. i)
    local ga, gb = torch.randn_like(a), torch.randn_like(b)
    torch.autograd.backward({ a, b }, { ga, gb })
    torch.autograd.backward({ ea, eb }, { ga, gb })
    near(x.grad, ex.grad, "grad x, call " .. i, 1e-4)
    near(w.grad, ew.grad, "grad w, call " .. i, 1e-4)
  end
  -- the restrictions at call time
  local x, w = torch.randn(8, 5, { device = dev, requires_grad = true }), torch.randn(5, 3, { device = dev, requires_grad = true })
  T.raises(function() g(x:detach(), w) end, "~argument 1 has requires_grad=false but its sample had requires_grad=true")
  T.raises(function() g(torch.randn(4, 5, { device = dev, requires_grad = true }), w) end, "~argument 1 is a")
  T.raises(function() g(x) end, "~captured with 2 argument(s), got 1")
  T.raises(function() g(x:double(), w) end, "~the graph was captured for torch.float32")
end)

T.test("make_graphed_callables: a module trains as eager; eval mode runs eagerly", function()
  local graphed, eager = mlp(3), mlp(3)
  local sample = torch.randn(10, 16, { device = dev })
  local m = cuda.make_graphed_callables(graphed, { sample })
  T.check(m == graphed, "the module itself comes back")
  local opt_g = torch.optim.SGD(graphed:parameters(), { lr = 0.1 })
  local opt_e = torch.optim.SGD(eager:parameters(), { lr = 0.1 })
  for step = 1, 4 do
    local x = torch.randn(10, 16, { device = dev })
    local y = torch.randn(10, 4, { device = dev })
    opt_g:zero_grad(); opt_e:zero_grad()
    local lg = ((m(x) - y) ^ 2):mean()
    local le = ((eager(x) - y) ^ 2):mean()
    lg:backward(); le:backward()
    near(lg, le, "loss, step " .. step)
    local pg, pe = graphed:parameters(), eager:parameters()
    for j = 1, #pg do near(pg[j].grad, pe[j].grad, "grad " .. j .. ", step " .. step, 1e-4) end
    opt_g:step(); opt_e:step()
  end
  local pg, pe = graphed:parameters(), eager:parameters()
  for j = 1, #pg do near(pg[j], pe[j], "trained weight " .. j, 1e-4) end
  -- the graph was taken in training mode: in eval mode the module's own forward runs
  graphed:eval(); eager:eval()
  local x = torch.randn(3, 16, { device = dev })
  near(graphed(x), eager(x), "eval mode: a batch of another size runs eagerly")
  graphed:train()
  -- gradient accumulation over two calls without zero_grad
  for _, p in ipairs(graphed:parameters()) do p.grad = nil end
  for _, p in ipairs(eager:parameters()) do p.grad = nil end
  for _ = 1, 2 do
    local xb = torch.randn(10, 16, { device = dev })
    m(xb):sum():backward()
    eager(xb):sum():backward()
  end
  for j = 1, #pg do near(pg[j].grad, pe[j].grad, "accumulated grad " .. j, 1e-4) end
  -- hooks registered after graphing are allowed and run
  local seen = 0
  graphed:register_forward_hook(function() seen = seen + 1 end)
  m(torch.randn(10, 16, { device = dev }))
  T.eq(seen, 1, "a hook added afterwards runs")
end)

T.test("make_graphed_callables: two callables chained, one list out, no_grad", function()
  local m1, e1 = mlp(5), mlp(5)
  local f2 = function(h) return { h:sin(), h * 3 } end
  local s1 = torch.randn(6, 16, { device = dev })
  local s2 = torch.randn(6, 4, { device = dev, requires_grad = true })
  local r = cuda.make_graphed_callables({ m1, f2 }, { { s1 }, { s2 } }, { num_warmup_iters = 2 })
  T.eq(#r, 2, "one callable per callable")
  local g1, g2 = r[1], r[2]
  local x = torch.randn(6, 16, { device = dev })
  local outs = g2(g1(x))
  T.eq(#outs, 2, "a list out stays a list")
  local eo = f2(e1(x))
  near(outs[1], eo[1], "chained output 1")
  near(outs[2], eo[2], "chained output 2")
  ;(outs[1]:sum() + outs[2]:sum()):backward()
  ;(eo[1]:sum() + eo[2]:sum()):backward()
  local p1, pe = m1:parameters(), e1:parameters()
  for j = 1, #p1 do near(p1[j].grad, pe[j].grad, "grad through both graphs " .. j, 1e-4) end
  -- under no_grad the forward graph replays and builds no history
  local y = torch.no_grad(function() return g1(x) end)
  T.check(not y.requires_grad, "no history under no_grad")
  near(y, e1(x), "no_grad output")
end)

T.test("make_graphed_callables: unused inputs and restrictions", function()
  local f = function(x, unused) return x * 2 end
  local sx = torch.randn(4, { device = dev, requires_grad = true })
  local su = torch.randn(4, { device = dev, requires_grad = true })
  T.raises(function() cuda.make_graphed_callables(f, { sx, su }) end, "~One of the differentiated Tensors appears to not have been used")
  local g = cuda.make_graphed_callables(f, { sx, su }, { allow_unused_input = true })
  local x, u = torch.randn(4, { device = dev, requires_grad = true }), torch.randn(4, { device = dev, requires_grad = true })
  g(x, u):sum():backward()
  near(x.grad, torch.full({ 4 }, 2.0), "grad of the used input")
  T.check(u.grad == nil, "no grad for the unused input")
  T.raises(function() cuda.make_graphed_callables(f, { torch.randn(4), su }, { allow_unused_input = true }) end,
    "~sample argument 1 of callable 1 is on cpu")
  T.raises(function() cuda.make_graphed_callables(nn.Linear(4, 4), { sx }) end, "~parameter 1 of callable 1 is on cpu")
  T.raises(function() cuda.make_graphed_callables(function(x) return 3 end, { sx }) end, "~output 1 is int")
  -- inputs that need no grad: a forward graph only
  local h = cuda.make_graphed_callables(function(x) return x + 1 end, { torch.randn(3, { device = dev }) })
  near(h(torch.ones(3, { device = dev })), torch.full({ 3 }, 2.0), "forward only")
end)

T.test("sync debug mode", function()
  T.eq(cuda.get_sync_debug_mode(), 0, "default")
  local x = torch.arange(6, { device = dev, dtype = torch.float32 })
  local ok, err = pcall(function()
    cuda.set_sync_debug_mode("error")
    T.eq(cuda.get_sync_debug_mode(), 2)
    T.raises(function() return x:sum():item() end, "~called a synchronizing CUDA operation")
    T.raises(function() return x:tolist() end, "~called a synchronizing CUDA operation")
    T.raises(function() return x:cpu() end, "~called a synchronizing CUDA operation")
    T.raises(function() cuda.current_stream():synchronize() end, "~called a synchronizing CUDA operation")
    local y = x * 2 + 1 -- work that stays on the GPU is fine
    cuda.synchronize()  -- as in PyTorch, an explicit device synchronize is not flagged
    cuda.set_sync_debug_mode(1)
    T.eq(cuda.get_sync_debug_mode(), 1)
    T.eq(y:sum():item(), 36.0, "warn mode: the value still comes back")
    cuda.set_sync_debug_mode("default")
    T.eq(cuda.get_sync_debug_mode(), 0)
    T.eq(x:tolist(), { 0.0, 1.0, 2.0, 3.0, 4.0, 5.0 })
    T.raises(function() cuda.set_sync_debug_mode("loud") end, "invalid value of debug_mode, expected one of `default`, `warn`, `error`")
    T.raises(function() cuda.set_sync_debug_mode(3) end, "~invalid value of debug_mode, expected one of 0,1,2")
  end)
  cuda.set_sync_debug_mode(0)
  if not ok then error(err, 0) end
end)

T.test("memory_snapshot: segments and blocks as the allocator holds them", function()
  collectgarbage("collect")
  local x = torch.empty(1000000, { device = dev }) -- 4 MB: a large block
  local s = torch.empty(10, { device = dev })       -- a small block
  local snap = cuda.memory_snapshot()
  local reserved, allocated, found, found_small = 0, 0, nil, nil
  for _, seg in ipairs(snap) do
    local total, alloc, active, addr = 0, 0, 0, seg.address
    for _, b in ipairs(seg.blocks) do
      T.eq(b.address, addr, "blocks tile the segment in order")
      addr = addr + b.size
      total = total + b.size
      if b.state == "active_allocated" then alloc = alloc + b.size end
      if b.state ~= "inactive" then active = active + b.size end
      if b.address == x:data_ptr() then found = { b, seg } end
      if b.address == s:data_ptr() then found_small = { b, seg } end
    end
    T.eq(seg.total_size, total, "total_size")
    T.eq(seg.allocated_size, alloc, "allocated_size")
    T.eq(seg.active_size, active, "active_size")
    if seg.device == cuda.current_device() then
      reserved = reserved + seg.total_size
      allocated = allocated + seg.allocated_size
    end
  end
  T.eq(reserved, cuda.memory_reserved(), "the segments make up memory_reserved")
  T.eq(allocated, cuda.memory_allocated(), "the allocated blocks make up memory_allocated")
  T.check(found and found[1].state == "active_allocated" and found[1].size >= 4000000, "x's block")
  T.eq(found and found[2].segment_type, "large")
  T.eq(found_small and found_small[2].segment_type, "small")
  T.eq(found_small and found_small[1].size, 512, "10 floats round to 512 bytes")
  local snap2 = cuda.memory._snapshot()
  T.eq(#snap2.segments, #snap, "_snapshot's segments")
  T.eq(#snap2.device_traces, cuda.device_count())
end)

T.test("caching_allocator_alloc / _delete, reset_accumulated_memory_stats", function()
  collectgarbage("collect")
  local before = cuda.memory_allocated()
  local p = cuda.caching_allocator_alloc(1000)
  T.check(math.type(p) == "integer" and p ~= 0, "an address")
  T.eq(cuda.memory_allocated() - before, 1024, "rounded to 512 bytes")
  cuda.caching_allocator_delete(p)
  T.eq(cuda.memory_allocated(), before, "given back")
  T.raises(function() cuda.caching_allocator_delete(p) end, "~was not allocated by the caching allocator, or was freed already")
  local q = cuda.caching_allocator_alloc(4096, 0, cuda.Stream())
  T.eq(cuda.memory_allocated() - before, 4096, "on a side stream")
  cuda.caching_allocator_delete(q)
  local q2 = cuda.caching_allocator_alloc(4096, "cuda:0")
  cuda.caching_allocator_delete(q2)
  T.raises(function() cuda.caching_allocator_alloc(10, cuda.device_count()) end, "~Invalid device id")
  cuda.reset_accumulated_memory_stats()
  local st = cuda.memory_stats()
  T.eq(st.num_device_alloc, 0)
  T.eq(st.num_ooms, 0)
end)

T.test("host memory statistics follow pinning", function()
  collectgarbage("collect") -- pinned tensors that died earlier are freed now, not in the middle
  cuda.reset_accumulated_host_memory_stats()
  local a = torch.randn(1000):pin_memory()
  local s = cuda.host_memory_stats()
  T.check(s["active_requests.current"] >= 1, "a block handed out")
  T.check(s["active_bytes.current"] >= 4000, "its bytes")
  T.check(s["allocations.current"] >= 1 and s["allocated_bytes.current"] >= s["active_bytes.current"], "blocks owned")
  a = nil
  collectgarbage("collect")
  local s2 = cuda.host_memory_stats()
  T.eq(s2["active_requests.current"], s["active_requests.current"] - 1, "freed")
  cuda.empty_cache()
  cuda.reset_peak_host_memory_stats()
  local s3 = cuda.host_memory_stats()
  T.eq(s3["allocations.peak"], s3["allocations.current"], "peak reset")
  cuda.reset_accumulated_host_memory_stats()
  T.eq(cuda.host_memory_stats().num_host_alloc, 0, "accumulated reset")
end)

T.test("blas handle, external streams", function()
  local h = cuda.current_blas_handle()
  T.check(math.type(h) == "integer" and h ~= 0, "a handle")
  local s = cuda.ExternalStream(0) -- the legacy default stream
  local x = torch.arange(4, { device = dev, dtype = torch.float32 })
  cuda.synchronize()
  local y
  do
    local _ <close> = cuda.stream(s)
    y = x * 10
    cuda.current_stream():synchronize()
  end
  T.eq(y:tolist(), { 0.0, 10.0, 20.0, 30.0 })
  T.check(cuda.get_stream_from_external(0) ~= nil, "get_stream_from_external")
end)

T.test("NVML readings (or a clear error without libnvidia-ml)", function()
  local ok, u = pcall(cuda.utilization)
  if not ok then
    T.check(tostring(u):find("NVML is not available", 1, true), "clear error: " .. tostring(u))
    T.skip("no NVML", 5)
  else
    T.check(u >= 0 and u <= 100, "utilization percent")
    T.check(cuda.memory_usage() >= 0 and cuda.memory_usage() <= 100, "memory_usage percent")
    local t = cuda.temperature()
    T.check(t > 0 and t < 130, "temperature " .. t)
    T.check(cuda.power_draw() > 0, "power in mW")
    T.check(cuda.clock_rate() > 0, "SM clock in MHz")
    T.check(cuda.list_gpu_processes():find("^GPU:0\n") ~= nil, "list_gpu_processes")
  end
  local used = cuda.device_memory_used()
  local free, total = cuda.mem_get_info()
  T.eq(used, total - free, "device_memory_used")
end)
