-- torch.profiler: what is recorded (op counts against the calls the test makes, ranges and
-- their nesting, autograd's nodes), the times (against the wall clock, self time against the
-- children's), schedules (against the action sequence worked out by hand), the Chrome trace
-- (read back with a JSON parser) and the errors.
local T = ...
local json = require "json"
local time = require "time"
local profiler = torch.profiler
local CPU = profiler.ProfilerActivity.CPU

local function cpu_profile(opts)
  opts = opts or {}
  opts.activities = { CPU }
  return profiler.profile(opts)
end

local function count(events, name)
  local n = 0
  for _, e in ipairs(events) do if e.name == name then n = n + 1 end end
  return n
end

local function find(list, key)
  for _, e in ipairs(list) do if e.key == key then return e end end
end

T.test("every op call is recorded once, by name", function()
  local x, y = torch.randn(5, 7), torch.randn(5, 7)
  local prof = cpu_profile()
  for _ = 1, 4 do
    local z = x:exp()
    z = z + y
    z:relu()
  end
  x:neg()
  prof:stop()
  x:exp() -- after stop: not recorded
  local ev = prof:events()
  T.eq({ count(ev, "exp"), count(ev, "add"), count(ev, "relu"), count(ev, "neg") }, { 4, 4, 4, 1 }, "calls per op")
  local avg = prof:key_averages()
  T.eq(find(avg, "exp").count, 4, "key_averages count")
  local sum = 0
  for _, e in ipairs(ev) do if e.name == "exp" then sum = sum + e.cpu_time_total end end
  T.near(find(avg, "exp").cpu_time_total, sum, 1e-9, "an average's total is the sum of its events")
  T.near(find(avg, "exp").cpu_time, sum / 4, 1e-9, "and its mean over the calls")
  for _, e in ipairs(ev) do
    T.check(e.cpu_time_total >= 0 and e.device_type == "CPU" and e.cuda_time_total == 0, e.name .. ": a CPU event")
  end
end)

T.test("ranges nest, and self time is total minus the children's", function()
  local x = torch.randn(300, 300)
  local prof = cpu_profile()
  do
    local outer <close> = profiler.record_function("outer")
    x:exp()
    do
      local inner <close> = profiler.record_function("inner")
      x:sin()
      x:cos()
    end
  end
  local got = { profiler.record_function("wrapped", function(a, b) x:tanh(); return a + b, "ok" end, 2, 3) }
  T.eq(got, { 5, "ok" }, "record_function(name, fn, ...) returns fn's results")
  local ok = pcall(profiler.record_function, "failing", function() error("boom") end)
  T.check(not ok, "an error in fn propagates")
  x:neg()
  prof:stop()
  local ev = prof:events()
  local by = {}
  for i, e in ipairs(ev) do by[e.name] = by[e.name] or i end
  local outer, inner = ev[by.outer], ev[by.inner]
  T.eq({ outer.parent, inner.parent, ev[by.exp].parent, ev[by.sin].parent, ev[by.cos].parent, ev[by.tanh].parent },
    { nil, by.outer, by.outer, by.inner, by.inner, by.wrapped }, "parents")
  T.eq(ev[by.neg].parent, nil, "the failing range was closed: the next op is at the top level")
  T.eq(outer.children, { by.exp, by.inner }, "outer's direct children")
  T.near(outer.cpu_time_total, (outer.end_us - outer.start_us), 1e-9, "a range's total is its span")
  T.near(outer.self_cpu_time_total, outer.cpu_time_total - ev[by.exp].cpu_time_total - inner.cpu_time_total, 1e-6,
    "self = total - the children's totals")
  T.check(inner.start_us >= outer.start_us and inner.end_us <= outer.end_us, "inner lies within outer")
  T.check(ev[by.sin].start_us >= inner.start_us and ev[by.cos].end_us <= inner.end_us, "the ops lie within inner")
end)

T.test("an op's time agrees with the wall clock", function()
  local x = torch.rand(4000000)
  x:exp() -- warm
  local prof = cpu_profile()
  local t0 = time.perf_counter()
  x:exp()
  local wall = (time.perf_counter() - t0) * 1e6
  prof:stop()
  local e = find(prof:key_averages(), "exp")
  T.check(e.cpu_time_total <= wall * 1.0001 + 1, string.format("op %.1f us within the wall time %.1f us", e.cpu_time_total, wall))
  T.check(e.cpu_time_total >= 0.3 * wall, string.format("op %.1f us is most of the wall time %.1f us", e.cpu_time_total, wall))
end)

T.test("record_shapes and group_by_input_shape", function()
  local prof = cpu_profile({ record_shapes = true })
  torch.zeros(3, 4):exp()
  torch.zeros(2, 2):exp()
  torch.zeros(3, 4):exp()
  torch.zeros(2, 5):add(torch.zeros(5))
  prof:stop()
  local groups = prof:key_averages({ group_by_input_shape = true })
  local n = {}
  for _, g in ipairs(groups) do if g.key == "exp" then n[g.input_shapes] = g.count end end
  T.eq(n, { ["[[3, 4]]"] = 2, ["[[2, 2]]"] = 1 }, "exp grouped by its input's shape")
  for _, g in ipairs(groups) do if g.key == "add" then T.eq(g.input_shapes, "[[2, 5], [5]]", "both inputs' shapes") end end
  local tab = groups:table()
  T.check(tab:find("Input Shapes", 1, true) and tab:find("[[3, 4]]", 1, true), "the table shows the shapes")
  T.eq(find(prof:key_averages(), "exp").input_shapes, "", "not grouped: no shapes")
end)

T.test("autograd's nodes are ranges around their backward's ops", function()
  local x = torch.randn(4, 3, { requires_grad = true })
  local y = torch.randn(4, 3, { requires_grad = true })
  local prof = cpu_profile()
  local loss = (x * y):sum()
  loss:backward()
  prof:stop()
  local ev = prof:events()
  local node
  for i, e in ipairs(ev) do if e.name == "autograd::engine::evaluate_function: MulBackward0" then node = i end end
  T.check(node ~= nil, "MulBackward0 is recorded")
  if not node then return end
  local muls = 0
  for _, c in ipairs(ev[node].children) do if ev[c].name == "mul" then muls = muls + 1 end end
  T.eq(muls, 2, "its two gradients are muls inside it")
  T.eq(count(ev, "autograd::engine::evaluate_function: SumBackward0"), 1, "SumBackward0 once")
  T.eq(count(ev, "mul"), 3, "one mul forward, two in backward")
end)

T.test("a custom Function's node keeps its name after the node is freed", function()
  local Twice = torch.autograd.Function:extend("TwiceForProfiler")
  function Twice.forward(_, x) return x * 2 end
  function Twice.backward(_, g) return g * 2 end
  local prof = cpu_profile()
  do
    local x = torch.randn(3, { requires_grad = true })
    Twice.apply(x):sum():backward()
  end
  collectgarbage()
  collectgarbage()
  prof:stop()
  T.eq(count(prof:events(), "autograd::engine::evaluate_function: TwiceForProfilerBackward"), 1, "recorded under its own name")
end)

T.test("schedules: the actions, the steps recorded and on_trace_ready", function()
  local A = profiler.ProfilerAction
  local s = profiler.schedule({ wait = 1, warmup = 1, active = 2, ["repeat"] = 2, skip_first = 1 })
  local got = {}
  for step = 0, 10 do got[#got + 1] = s(step) end
  T.eq(got, { A.NONE, A.NONE, A.WARMUP, A.RECORD, A.RECORD_AND_SAVE, A.NONE, A.WARMUP, A.RECORD, A.RECORD_AND_SAVE,
    A.NONE, A.NONE }, "skip 1, then (wait 1, warmup 1, active 2) twice")
  local forever = profiler.schedule(0, 0, 3)
  T.eq({ forever(0), forever(2), forever(3), forever(3001) }, { A.RECORD, A.RECORD_AND_SAVE, A.RECORD, A.RECORD }, "repeat 0 cycles forever")

  local x = torch.randn(8)
  local traces = {}
  local prof = profiler.profile({ activities = { CPU }, schedule = profiler.schedule({ wait = 1, warmup = 1, active = 2 }),
    on_trace_ready = function(p)
      local steps, exps = {}, 0
      for _, e in ipairs(p:events()) do
        if e.name:find("^ProfilerStep#") then steps[#steps + 1] = e.name end
        if e.name == "exp" then exps = exps + 1 end
      end
      traces[#traces + 1] = { steps = steps, exps = exps, step_num = p.step_num }
    end })
  for _ = 1, 9 do
    x:exp()
    prof:step()
  end
  prof:stop()
  T.eq(traces, {
    { steps = { "ProfilerStep#2", "ProfilerStep#3" }, exps = 2, step_num = 4 },
    { steps = { "ProfilerStep#6", "ProfilerStep#7" }, exps = 2, step_num = 8 },
  }, "two active periods, each with its two steps and nothing of the warm-up")
end)

T.test("with_stack: each op's calling lines, innermost first", function()
  local src = debug.getinfo(1, "S").short_src
  local x = torch.randn(4)
  local l_inner, l_outer
  local function inner(t) l_inner = debug.getinfo(1, "l").currentline; return t:exp() end
  local function outer(t) l_outer = debug.getinfo(1, "l").currentline; local r = inner(t); return r end -- not a tail call
  local prof = cpu_profile({ with_stack = true })
  outer(x)
  outer(x)
  local l_direct = debug.getinfo(1, "l").currentline; x:neg()
  prof:stop()
  local ev = prof:events()
  local exps, neg = {}, nil
  for _, e in ipairs(ev) do
    if e.name == "exp" then exps[#exps + 1] = { e.stack[1], e.stack[2] } end
    if e.name == "neg" then neg = e.stack[1] end
  end
  local want = { src .. ":" .. l_inner, src .. ":" .. l_outer }
  T.eq(exps, { want, want }, "the op's frame, then its caller's (the library's own Lua left out)")
  T.eq(neg, src .. ":" .. l_direct, "an op called directly")
  local groups = prof:key_averages({ group_by_stack_n = 1 })
  local e = find(groups, "exp")
  T.eq({ e.count, e.stack }, { 2, { want[1] } }, "grouped by the innermost frame")
  T.check(groups:table():find("Source Location", 1, true) ~= nil, "the table shows the frames")
  local plain = cpu_profile()
  x:exp()
  plain:stop()
  T.eq(#plain:events()[1].stack, 0, "no frames without with_stack")
  T.raises(function() plain:key_averages({ group_by_stack_n = 2 }) end, "key_averages: group_by_stack_n needs a profile made with with_stack=true", "group_by_stack_n")
end)

T.test("the Chrome trace reads back", function()
  local path = os.tmpname()
  local x = torch.randn(10)
  local prof = cpu_profile({ record_shapes = true })
  do
    local r <close> = profiler.record_function("label \"quoted\"")
    x:exp()
    x:exp()
  end
  prof:stop()
  prof:export_chrome_trace(path)
  local f = assert(io.open(path))
  local doc = json.decode(f:read("a"), function(msg, pos) error(msg .. " at " .. pos) end)
  f:close()
  os.remove(path)
  local ops, labels = 0, {}
  for i = 1, doc.traceEvents.n do
    local e = doc.traceEvents[i]
    if e.ph == "X" and e.cat == "cpu_op" and e.name == "exp" then
      ops = ops + 1
      T.eq(e.args["Input Dims"], "[[10]]", "shapes in args")
    end
    if e.cat == "user_annotation" then labels[#labels + 1] = e.name end
  end
  T.eq(ops, 2, "two exp events")
  T.eq(labels, { 'label "quoted"' }, "the range, its name escaped and read back")
  local dir = os.tmpname()
  os.remove(dir)
  local handler = profiler.tensorboard_trace_handler(dir, "worker0")
  handler(prof)
  local p = io.popen("ls " .. dir)
  local listing = p:read("a")
  p:close()
  T.check(listing:match("^worker0%.%d+%.pt%.trace%.json\n$") ~= nil, "tensorboard_trace_handler wrote " .. listing)
  os.execute("rm -rf " .. dir)
end)

T.test("errors", function()
  T.raises(function() profiler.profile({ with_flops = true }) end,
    "profile: with_flops=true is not supported: nnrepl's profiler records op times, input shapes, stacks and memory only", "with_flops")
  T.raises(function() profiler.profile({ activities = { "TPU" } }) end, "~unknown activity TPU", "bad activity")
  T.raises(function() profiler.profile({ colour = 1 }) end, "~unknown keyword 'colour'", "unknown keyword")
  T.raises(function() profiler.record_function(3) end, "record_function: name must be a string, got int", "range name")
  T.raises(function() profiler.schedule({ wait = 1, warmup = 0, active = 0 }) end, "schedule: active must be at least 1, got 0", "active 0")
  local prof = cpu_profile()
  T.raises(function() prof:key_averages() end, "~still recording", "averages while recording")
  T.raises(function() cpu_profile() end, "profile: another profiler is running on this thread", "two at once")
  prof:stop()
  T.raises(function() prof:key_averages():table({ sort_by = "speed" }) end, "~unknown sort_by 'speed'", "sort key")
  T.raises(function() prof:export_chrome_trace("/nonexistent/dir/t.json") end, "~cannot write '/nonexistent/dir/t.json'", "unwritable")
  local off = profiler.profile({ enabled = false })
  torch.zeros(2):exp()
  off:stop()
  T.raises(function() off:events() end, "profile: no events were recorded", "enabled=false records nothing")
  local legacy = torch.autograd.profiler.profile({ use_cuda = false })
  torch.zeros(2):exp()
  legacy:stop()
  T.eq(count(legacy:events(), "exp"), 1, "torch.autograd.profiler.profile")
end)

T.test("CUDA ops carry their GPU time", function()
  if not torch.cuda.is_available() then return T.skip("no GPU", 6) end
  local a, b = torch.randn(2048, 2048, { device = "cuda" }), torch.randn(2048, 2048, { device = "cuda" })
  for _ = 1, 3 do a:mm(b) end
  torch.cuda.synchronize()
  local s, e = torch.cuda.Event({ enable_timing = true }), torch.cuda.Event({ enable_timing = true })
  s:record()
  for _ = 1, 5 do a:mm(b) end
  e:record()
  e:synchronize()
  local per = s:elapsed_time(e) * 1e3 / 5
  local prof = profiler.profile({ activities = { CPU, profiler.ProfilerActivity.CUDA } })
  for _ = 1, 5 do a:mm(b) end
  prof:stop()
  local mm = find(prof:key_averages(), "bmm")
  T.eq(mm.count, 5, "five products")
  T.check(math.abs(mm.cuda_time - per) < 0.25 * per, string.format("GPU time %.1f us against events %.1f us", mm.cuda_time, per))
  T.check(prof:key_averages():table():find("CUDA total", 1, true) ~= nil, "the table has the CUDA columns")
  local lin, x = nn.Linear(64, 32):cuda(), torch.randn(4, 8, 64, { device = "cuda" })
  local fused = profiler.profile({ activities = { CPU, profiler.ProfilerActivity.CUDA } })
  lin(x)
  fused:stop()
  local names = {}
  for _, ev in ipairs(fused:events()) do names[#names + 1] = ev.name .. (ev.device_us and " on the GPU" or "") end
  T.eq(names, { "bmm on the GPU" }, "a batched linear with a bias is one product, the bias in its epilogue")
  local host = torch.randn(1000, 1000)
  local rnn = nn.LSTM(16, 32):cuda()
  local seq = torch.randn(5, 3, 16, { device = "cuda" })
  local moves = profiler.profile({ activities = { CPU, profiler.ProfilerActivity.CUDA } })
  local dev = host:cuda()
  dev:cpu()
  rnn(seq)[1]:sum():backward()
  moves:stop()
  local seen = {}
  for _, ev in ipairs(moves:events()) do
    if ev.name:find("^memcpy") or ev.name:find("^cudnn_rnn") then seen[ev.name] = (seen[ev.name] or 0) + 1 end
  end
  T.eq(seen, { ["memcpy HtoD"] = 1, ["memcpy DtoH"] = 1, cudnn_rnn = 1, cudnn_rnn_backward = 1 },
    "copies between devices and cuDNN's RNN are recorded")
  local cpu_only = profiler.profile({ activities = { CPU } })
  a:mm(b)
  cpu_only:stop()
  T.eq(find(cpu_only:key_averages(), "bmm").cuda_time_total, 0, "CUDA activity off: no GPU time")
end)

-- export_memory_timeline: PyTorch's [times, sizes] layout (a row of 1 + 8 categories per time,
-- nnrepl's bytes all in the last, unknown one), its totals worked out from the tensors made:
-- x (100 floats, 400 bytes) and z (50, 200) live at the end, y (400) freed
T.test("export_memory_timeline: [times, sizes] with the live bytes", function()
  local json = require "json"
  local p = torch.profiler.profile({ profile_memory = true, record_shapes = true, with_stack = true })
  local x = torch.randn(100)
  local y = x * 2
  local z = torch.empty(50)
  y = nil
  collectgarbage()
  p:stop()
  local path = os.tmpname()
  p:export_memory_timeline(path, "cpu")
  local tl = json.load(path)
  os.remove(path)
  local times, sizes = tl[1], tl[2]
  T.eq(#times, #sizes, "a row per time")
  local peak, ok = 0, true
  for i, row in ipairs(sizes) do
    if #row ~= 9 or row[1] ~= 0 then ok = false end
    for c = 2, 8 do if row[c] ~= 0 then ok = false end end
    if i > 1 and times[i] <= times[i - 1] then ok = false end
    peak = math.max(peak, row[9])
  end
  T.check(ok, "rows of 9, categories other than unknown empty, times increasing")
  T.eq(sizes[#sizes][9], 600, "x and z at the end")
  T.check(peak >= 1000, "x, y and z at once: " .. peak)
  T.check(x ~= nil and z ~= nil, "kept alive")
  local q = torch.profiler.profile({ profile_memory = true })
  q:stop()
  T.raises(function() q:export_memory_timeline(path) end, "record_shapes=True, with_stack=True required for memory profiling.")
end)
