-- torch.profiler with profile_memory: each allocation and free of tensor storage against the
-- byte sizes worked out here (numel * element_size), attributed to the op or range open then
-- (self against total through nested record_functions), frees negative, the "[memory]" events
-- of the Chrome trace read back with a JSON parser, the table's memory columns and sort keys.
local T = ...
local json = require "json"
local profiler = torch.profiler
local CPU, CUDA = profiler.ProfilerActivity.CPU, profiler.ProfilerActivity.CUDA

-- The collector stays off while recording, so that only the test's own tensors come and go
-- (stop() turns it on again).
local function mem_profile(opts)
  opts = opts or {}
  opts.activities = opts.activities or { CPU }
  if opts.profile_memory == nil then opts.profile_memory = true end
  collectgarbage()
  collectgarbage("stop")
  return profiler.profile(opts)
end

local function stop(prof)
  prof:stop()
  collectgarbage("restart")
end

local function bytes(t) return t:numel() * t:element_size() end

local function named(list, name)
  local found = {}
  for _, e in ipairs(list) do if (e.name or e.key) == name then found[#found + 1] = e end end
  return found
end

T.test("an op's output allocation is its own, of the storage's byte size", function()
  local x = torch.randn(100, 50)
  local prof = mem_profile()
  local a = x:exp()
  local b = x:to(torch.float64)
  local c = torch.zeros(7, 3, { dtype = torch.int64 })
  local d = torch.empty(33, { dtype = torch.float16 })
  stop(prof)
  local ev = prof:events()
  local exp = named(ev, "exp")[1]
  T.eq({ exp.cpu_memory_usage, exp.self_cpu_memory_usage, exp.cuda_memory_usage, exp.self_cuda_memory_usage },
    { bytes(a), bytes(a), 0, 0 }, "exp: its output's 20000 bytes, on the CPU")
  T.eq(bytes(a), 20000, "100 x 50 float32")
  local total, widths = 0, {}
  for _, e in ipairs(ev) do
    total = total + e.self_cpu_memory_usage
    if e.self_cpu_memory_usage ~= 0 then widths[#widths + 1] = e.self_cpu_memory_usage end
  end
  table.sort(widths)
  local want = { bytes(a), bytes(b), bytes(c), bytes(d) }
  table.sort(want)
  T.eq(widths, want, "one event per allocation, each the size of its tensor (float64, int64, float16 too)")
  T.eq(total, bytes(a) + bytes(b) + bytes(c) + bytes(d), "nothing else was allocated")
  T.eq(#named(ev, "[memory]"), 1, "torch.empty runs no op: its allocation is a top-level [memory] event")
  T.eq(named(ev, "[memory]")[1].cpu_memory_usage, bytes(d), "of 66 bytes")
  local avg = prof:key_averages()
  T.eq(named(avg, "exp")[1].self_cpu_memory_usage, bytes(a), "key_averages keeps it")
  T.eq({ exp.device_memory_usage, exp.self_device_memory_usage }, { 0, 0 }, "device_memory_usage aliases")
end)

T.test("self and total memory nest inside record_function; frees count negative", function()
  local x = torch.randn(64, 32) -- 8192 bytes each result
  local n = bytes(x)
  local prof = mem_profile()
  local kept
  do
    local outer <close> = profiler.record_function("outer")
    kept = x:exp() -- + n in exp, which outer contains
    local direct = torch.empty(10) -- + 40 in outer itself, freed later outside it
    do
      local inner <close> = profiler.record_function("inner")
      local tmp <close> = x:sin() -- + n in sin, then - n in inner when tmp closes (before inner does)
    end
    do
      local r <close> = profiler.record_function("freeing")
      direct = nil
      collectgarbage() -- the 40 bytes come back here
    end
  end
  do local gone <close> = x:cos() end -- + n in cos, - n at the top level
  stop(prof)
  local ev = prof:events()
  local function one(name) return named(ev, name)[1] end
  local outer, inner, freeing = one("outer"), one("inner"), one("freeing")
  T.eq({ one("sin").cpu_memory_usage, one("sin").self_cpu_memory_usage }, { n, n }, "sin allocates its output")
  T.eq({ inner.cpu_memory_usage, inner.self_cpu_memory_usage }, { 0, -n }, "inner: sin's + n and its own - n")
  T.eq({ freeing.cpu_memory_usage, freeing.self_cpu_memory_usage }, { -40, -40 }, "a free by the collector, inside a range")
  T.eq(outer.self_cpu_memory_usage, 40, "outer's own: torch.empty's 40 bytes")
  T.eq(outer.cpu_memory_usage, n + 40 + 0 - 40, "outer's total: exp, its own, inner's and freeing's")
  T.eq(outer.children, { one("exp").id, inner.id, freeing.id }, "memory records are not children")
  local top = named(ev, "[memory]")
  T.eq(#top, 1, "one top-level record")
  T.eq({ top[1].cpu_memory_usage, top[1].self_cpu_memory_usage, top[1].parent }, { -n, -n, nil }, "cos's output freed outside every event")
  local avg = prof:key_averages()
  T.eq({ named(avg, "[memory]")[1].count, named(avg, "[memory]")[1].self_cpu_memory_usage }, { 1, -n }, "[memory] in key_averages")
  T.check(kept ~= nil, "kept alive")
end)

T.test("the table's memory columns and memory sort keys", function()
  local x = torch.randn(256) -- 1 Kb
  local prof = mem_profile()
  local r = torch.randn(512, 512)
  local kept = { r, r + r } -- 1 Mb each
  for i = 1, 3 do kept[#kept + 1] = x:abs() end
  do local gone <close> = torch.ones(2048, 2048) end -- 16 Mb in and out
  stop(prof)
  local avg = prof:key_averages()
  local tab = avg:table()
  local header = tab:match("\n(Name[^\n]*)")
  T.check(header:find("  CPU Mem  Self CPU Mem    # of Calls", 1, true) ~= nil, "PyTorch's headers: " .. header)
  T.check(not header:find("CUDA Mem", 1, true), "no CUDA memory columns without CUDA allocations")
  local abs = named(avg, "abs")[1]
  T.eq({ abs.count, abs.cpu_memory_usage }, { 3, 3 * bytes(x) }, "three 1 Kb outputs")
  T.check(tab:find("\nabs%s[^\n]*%s3%.00 Kb%s+3%.00 Kb%s+3\n") ~= nil, "abs's row: '3.00 Kb', PyTorch's units")
  T.check(tab:find("\nadd%s[^\n]*%s1%.00 Mb%s+1%.00 Mb%s+1\n") ~= nil, "add's: '1.00 Mb'")
  T.check(tab:find("\n%[memory%]%s[^\n]*%s%-16%.00 Mb%s+%-16%.00 Mb%s+1\n") ~= nil, "the free at the top level: '-16.00 Mb'")
  for _, key in ipairs({ "self_cpu_memory_usage", "cpu_memory_usage", "self_cuda_memory_usage", "cuda_memory_usage",
    "self_device_memory_usage", "device_memory_usage" }) do
    local rows = {}
    for name in avg:table({ sort_by = key }):gmatch("\n(%S+)%s+[%d.]+%%") do rows[#rows + 1] = name end
    T.eq(#rows, #avg, key .. ": every row")
    local values = {}
    for _, name in ipairs(rows) do values[#values + 1] = named(avg, name)[1][key] end
    local sorted = true
    for i = 2, #values do sorted = sorted and values[i - 1] >= values[i] end
    T.check(sorted, key .. ": descending, " .. table.concat(rows, " "))
    if key == "self_cpu_memory_usage" then
      T.eq({ rows[1], rows[#rows] }, { "fill", "[memory]" }, "the 16 Mb fill first, the 16 Mb free last")
    end
  end
  local plain = profiler.profile({ activities = { CPU } })
  torch.randn(100):exp()
  plain:stop()
  T.check(not plain:key_averages():table():find("CPU Mem", 1, true), "no memory columns without profile_memory")
  local any = false
  for _, e in ipairs(plain:events()) do any = any or e.name == "[memory]" or e.cpu_memory_usage ~= 0 end
  T.check(not any, "and nothing recorded")
end)

T.test("the Chrome trace's [memory] events", function()
  local path = os.tmpname()
  local x = torch.randn(30, 10)
  local prof = mem_profile()
  local y = x:exp()
  do local z <close> = x:sin() end
  stop(prof)
  prof:export_chrome_trace(path)
  local f = assert(io.open(path))
  local doc = json.decode(f:read("a"), function(msg, pos) error(msg .. " at " .. pos) end)
  f:close()
  os.remove(path)
  local mem = {}
  for i = 1, doc.traceEvents.n do
    local e = doc.traceEvents[i]
    if e.name == "[memory]" then mem[#mem + 1] = e end
  end
  T.eq(#mem, 3, "exp's and sin's allocations, sin's free")
  local n = bytes(y)
  T.eq({ mem[1].args.Bytes, mem[2].args.Bytes, mem[3].args.Bytes }, { n, n, -n }, "Bytes, a free negative")
  for _, e in ipairs(mem) do
    T.eq({ e.ph, e.cat, e.s, e.pid, e.tid, e.args["Device Type"], e.args["Device Id"], e.args["Total Reserved"] },
      { "i", "cpu_instant_event", "t", 0, 1, 0, -1, 0 }, "PyTorch's fields for a CPU record")
    T.check(math.type(e.args.Addr) == "integer" and e.args.Addr > 0, "an address")
    T.check(type(e.ts) == "number" and e.ts >= 0, "a time")
  end
  T.eq(mem[3].args.Addr, mem[2].args.Addr, "the free names the allocation's address")
  T.check(mem[1].args.Addr ~= mem[2].args.Addr, "two live tensors, two addresses")
  T.eq({ mem[2].args["Total Allocated"] - mem[1].args["Total Allocated"], mem[3].args["Total Allocated"] - mem[2].args["Total Allocated"] },
    { n, -n }, "Total Allocated moves by Bytes")
  T.check(mem[1].args["Total Allocated"] >= n, "and counts what was there before")
  local exp_op
  for i = 1, doc.traceEvents.n do if doc.traceEvents[i].name == "exp" then exp_op = doc.traceEvents[i] end end
  T.check(exp_op.ts <= mem[1].ts and mem[1].ts <= exp_op.ts + exp_op.dur, "exp's allocation lies within exp")
end)

T.test("CUDA memory columns", function()
  if not torch.cuda.is_available() then return T.skip("no GPU", 11) end
  local host = torch.randn(128, 64)
  local prof = mem_profile({ activities = { CPU, CUDA } })
  local g = torch.randn(256, 256, { device = "cuda" })
  local moved = host:cuda()
  local back = moved:cpu()
  do local tmp <close> = g:exp() end
  stop(prof)
  local ev = prof:events()
  local function self_cuda(name) return named(prof:key_averages(), name)[1].self_cuda_memory_usage end
  T.eq(self_cuda("memcpy HtoD"), bytes(host), "x:cuda() allocates on the GPU in its copy")
  T.eq(named(prof:key_averages(), "memcpy DtoH")[1].self_cpu_memory_usage, bytes(back), "and :cpu() on the host")
  T.eq(self_cuda("exp"), bytes(g), "exp's output on the GPU")
  local top = named(ev, "[memory]")
  T.eq(#top, 1, "the free of exp's output at the top level")
  T.eq({ top[1].cuda_memory_usage, top[1].cpu_memory_usage }, { -bytes(g), 0 }, "negative, on the GPU")
  local header = prof:key_averages():table():match("\n(Name[^\n]*)")
  T.check(header:find("CPU Mem  Self CPU Mem      CUDA Mem  Self CUDA Mem", 1, true) ~= nil, "the CUDA memory columns: " .. header)
  local path = os.tmpname()
  prof:export_chrome_trace(path)
  local f = assert(io.open(path))
  local doc = json.decode(f:read("a"))
  f:close()
  os.remove(path)
  local cuda = 0
  for i = 1, doc.traceEvents.n do
    local e = doc.traceEvents[i]
    if e.name == "[memory]" and e.args["Device Type"] == 1 then
      cuda = cuda + 1
      T.check(e.args["Device Id"] == torch.cuda.current_device() and e.args["Total Reserved"] >= e.args["Total Allocated"],
        "a CUDA record: its device, the caching allocator's totals")
    end
  end
  T.eq(cuda, 4, "randn, the copy in, exp, exp's free")
end)
