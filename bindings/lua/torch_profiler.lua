-- torch.profiler (also torch.autograd.profiler's profile and record_function): profile,
-- record_function, schedule, tensorboard_trace_handler, ProfilerActivity, ProfilerAction.
-- The engine records every op this thread dispatches (host time; GPU time from events on
-- the op's stream), record_function ranges, autograd's nodes, torch.distributed's collectives
-- and, with profile_memory, every allocation and free of tensor storage (bindings/profiler.c).
--   local prof <close> = torch.profiler.profile({activities = {ProfilerActivity.CPU, ProfilerActivity.CUDA}})
--   ... ; prof:stop(); print(prof:key_averages():table({sort_by = "cuda_time_total", row_limit = 10}))
-- As with every context manager here, profile and record_function start when made.
-- Ops are named as nnrepl's engine names them ("bmm" serves mm and matmul); an op that runs
-- inside another op's kernel counts in its caller. Times are in microseconds.
local torch = require "torch"
local U = require "nn_util"
local json = require "json"
local C = torch._profiler

local P = {}
torch.profiler = P

P.ProfilerActivity = { CPU = "CPU", CUDA = "CUDA" }
local Action = { NONE = "NONE", WARMUP = "WARMUP", RECORD = "RECORD", RECORD_AND_SAVE = "RECORD_AND_SAVE" }
P.ProfilerAction = Action

local NODE_PREFIX = "autograd::engine::evaluate_function: "

-- ---- schedule ----

-- schedule(wait, warmup, active, repeat=0, skip_first=0): the action for each step number
function P.schedule(...)
  local o = U.parse("schedule", { { "wait", U.REQUIRED }, { "warmup", U.REQUIRED }, { "active", U.REQUIRED },
    { "repeat", 0 }, { "skip_first", 0 } }, ...)
  local wait, warmup = U.check_int("schedule", "wait", o.wait, 0), U.check_int("schedule", "warmup", o.warmup, 0)
  local active, rep = U.check_int("schedule", "active", o.active, 1), U.check_int("schedule", "repeat", o["repeat"], 0)
  local skip = U.check_int("schedule", "skip_first", o.skip_first, 0)
  local cycle = wait + warmup + active
  return function(step)
    if step < skip then return Action.NONE end
    step = step - skip
    if rep > 0 and step // cycle >= rep then return Action.NONE end
    local m = step % cycle
    if m < wait then return Action.NONE end
    if m < wait + warmup then return Action.WARMUP end
    return m == cycle - 1 and Action.RECORD_AND_SAVE or Action.RECORD
  end
end

-- ---- record_function ----

local Range = { __name = "torch.profiler.record_function" }
Range.__index = Range
function Range:__close() if self.id then C.pop(self.id); self.id = nil end end
Range.__exit__ = Range.__close

-- record_function(name): a range open until the value is closed (`<close>`, or :__exit__());
-- record_function(name, fn, ...) runs fn(...) inside it and returns its results.
function P.record_function(name, fn, ...)
  if type(name) ~= "string" then U.errorf("record_function: name must be a string, got %s", U.typename(name)) end
  local r = setmetatable({ name = name, id = C.push(name) }, Range)
  if type(fn) ~= "function" then return r end
  local res = table.pack(pcall(fn, ...))
  r:__close()
  if not res[1] then error(res[2], 0) end
  return table.unpack(res, 2, res.n)
end

-- ---- events and their averages ----

local function time_str(us)
  if us >= 1e6 then return string.format("%.3fs", us / 1e6) end
  if us >= 1e3 then return string.format("%.3fms", us / 1e3) end
  return string.format("%.3fus", us)
end

-- PyTorch's memory sizes: "-1.50 Mb", "512 b"
local function memory_str(n)
  for _, u in ipairs({ { 1024 ^ 3, "Gb" }, { 1024 ^ 2, "Mb" }, { 1024, "Kb" } }) do
    if math.abs(n) >= u[1] then return string.format("%.2f %s", n / u[1], u[2]) end
  end
  return string.format("%d b", n)
end

local function split_lines(text)
  local out = {}
  for l in (text or ""):gmatch("[^\n]+") do out[#out + 1] = l end
  return out
end

local MEMORY_FIELDS = { "cpu_memory_usage", "self_cpu_memory_usage", "cuda_memory_usage", "self_cuda_memory_usage" }

-- The recorded events as FunctionEvents: name, kind, device_type, cpu_time_total,
-- self_cpu_time_total, cuda_time_total (= device_time_total), self_cuda_time_total, input_shapes,
-- stack (with_stack: the calling program's frames, innermost first), time_range {start,
-- elapsed_us}, parent (an index or nil), children (indices), and with profile_memory
-- cpu_memory_usage, self_cpu_memory_usage, cuda_memory_usage (= device_memory_usage),
-- self_cuda_memory_usage: the bytes allocated less those freed inside the event (self: not
-- inside its children). Memory records inside an event count in it; those outside every event
-- are events of their own, named "[memory]", as in PyTorch.
local function function_events(raw)
  local ev = {}
  for i, r in ipairs(raw) do
    local cpu = r.end_us - r.start_us
    local gpu = r.device_us or 0
    local mem, cuda_mem = r.bytes or 0, r.device:find("^cuda") ~= nil
    ev[i] = {
      id = i, name = r.kind == "node" and NODE_PREFIX .. r.name or r.name, kind = r.kind,
      device_type = r.device_us and "CUDA" or "CPU", device = r.device,
      cpu_time_total = cpu, self_cpu_time_total = cpu, cuda_time_total = gpu, self_cuda_time_total = gpu,
      cpu_memory_usage = cuda_mem and 0 or mem, cuda_memory_usage = cuda_mem and mem or 0,
      self_cpu_memory_usage = cuda_mem and 0 or mem, self_cuda_memory_usage = cuda_mem and mem or 0,
      input_shapes = r.shapes or "", stack = split_lines(r.stack), start_us = r.start_us, end_us = r.end_us,
      device_start_us = r.device_start_us, device_us = r.device_us, async = r.async,
      parent = r.parent > 0 and r.parent or nil, children = {},
    }
  end
  for i = #ev, 1, -1 do -- children come after their parent
    local e, p = ev[i], ev[ev[i].parent or 0]
    if p then
      table.insert(p.children, 1, i)
      p.self_cpu_time_total = p.self_cpu_time_total - e.cpu_time_total
      p.cuda_time_total = p.cuda_time_total + e.cuda_time_total
      p.cpu_memory_usage, p.cuda_memory_usage = p.cpu_memory_usage + e.cpu_memory_usage, p.cuda_memory_usage + e.cuda_memory_usage
      if e.kind == "memory" then
        p.self_cpu_memory_usage = p.self_cpu_memory_usage + e.cpu_memory_usage
        p.self_cuda_memory_usage = p.self_cuda_memory_usage + e.cuda_memory_usage
      end
    end
  end
  local kept, at = {}, {} -- memory records inside events are left out; the rest renumbered
  for i, e in ipairs(ev) do
    if not (e.kind == "memory" and e.parent) then kept[#kept + 1], at[i] = e, #kept + 1 end
  end
  for _, e in ipairs(kept) do
    e.id, e.parent = at[e.id], e.parent and at[e.parent]
    local children = {}
    for _, c in ipairs(e.children) do children[#children + 1] = at[c] end
    e.children = children
    e.device_time_total, e.self_device_time_total = e.cuda_time_total, e.self_cuda_time_total
    e.device_memory_usage, e.self_device_memory_usage = e.cuda_memory_usage, e.self_cuda_memory_usage
    e.cpu_time_range = { start = e.start_us, elapsed_us = e.cpu_time_total }
  end
  return kept
end

local EventList = { __name = "torch.profiler.EventList" }
EventList.__index = EventList

local sort_keys = {
  cpu_time = true, cuda_time = true, device_time = true, cpu_time_total = true, cuda_time_total = true,
  device_time_total = true, self_cpu_time_total = true, self_cuda_time_total = true, self_device_time_total = true,
  count = true, cpu_memory_usage = true, self_cpu_memory_usage = true, cuda_memory_usage = true,
  self_cuda_memory_usage = true, device_memory_usage = true, self_device_memory_usage = true,
}

local function average(events, by_shape, stack_n)
  local groups, order = {}, {}
  for _, e in ipairs(events) do
    local frames = table.move(e.stack, 1, math.min(stack_n, #e.stack), 1, {})
    local key = e.name .. "\0" .. (by_shape and e.input_shapes or "") .. "\0" .. table.concat(frames, "\n")
    local g = groups[key]
    if not g then
      g = { key = e.name, count = 0, cpu_time_total = 0, self_cpu_time_total = 0, cuda_time_total = 0,
        self_cuda_time_total = 0, input_shapes = by_shape and e.input_shapes or "", stack = frames, device_type = e.device_type }
      for _, f in ipairs(MEMORY_FIELDS) do g[f] = 0 end
      groups[key] = g
      order[#order + 1] = g
    end
    g.count = g.count + 1
    for _, f in ipairs({ "cpu_time_total", "self_cpu_time_total", "cuda_time_total", "self_cuda_time_total", table.unpack(MEMORY_FIELDS) }) do
      g[f] = g[f] + e[f]
    end
  end
  for _, g in ipairs(order) do
    g.cpu_time, g.cuda_time = g.cpu_time_total / g.count, g.cuda_time_total / g.count
    g.device_time, g.device_time_total, g.self_device_time_total = g.cuda_time, g.cuda_time_total, g.self_cuda_time_total
    g.device_memory_usage, g.self_device_memory_usage = g.cuda_memory_usage, g.self_cuda_memory_usage
  end
  return setmetatable(order, EventList)
end

-- table({sort_by=, row_limit=100, max_name_column_width=55, header=}): PyTorch's layout
function EventList:table(...)
  local o = U.parse("table", { { "sort_by", nil }, { "row_limit", 100 }, { "max_src_column_width", 75 },
    { "max_name_column_width", 55 }, { "max_shapes_column_width", 80 }, { "header", nil },
    { "top_level_events_only", false } }, ...)
  local rows = {}
  for i, e in ipairs(self) do rows[i] = e end
  if o.sort_by ~= nil then
    if not sort_keys[o.sort_by] then
      local names = {}
      for k in pairs(sort_keys) do names[#names + 1] = k end
      table.sort(names)
      U.errorf("table: unknown sort_by '%s' (one of %s)", tostring(o.sort_by), table.concat(names, ", "))
    end
    table.sort(rows, function(a, b) return a[o.sort_by] > b[o.sort_by] end)
  end
  local self_cpu, self_cuda, any_cuda, cuda_mem, shapes, stacks = 0, 0, false, false, false, false
  for _, e in ipairs(self) do
    self_cpu, self_cuda = self_cpu + e.self_cpu_time_total, self_cuda + e.self_cuda_time_total
    any_cuda = any_cuda or e.cuda_time_total > 0
    cuda_mem = cuda_mem or e.self_cuda_memory_usage > 0
    shapes = shapes or e.input_shapes ~= ""
    stacks = stacks or #e.stack > 0
  end
  local function pct(x, total) return string.format("%.2f%%", total > 0 and 100 * x / total or 0) end
  local w = o.max_name_column_width
  local cols = { { "Name", w, function(e) return #e.key > w and e.key:sub(1, w - 3) .. "..." or e.key end },
    { "Self CPU %", 12, function(e) return pct(e.self_cpu_time_total, self_cpu) end },
    { "Self CPU", 12, function(e) return time_str(e.self_cpu_time_total) end },
    { "CPU total %", 12, function(e) return pct(e.cpu_time_total, self_cpu) end },
    { "CPU total", 12, function(e) return time_str(e.cpu_time_total) end },
    { "CPU time avg", 12, function(e) return time_str(e.cpu_time) end } }
  if any_cuda then
    for _, c in ipairs({ { "Self CUDA", 12, function(e) return time_str(e.self_cuda_time_total) end },
      { "Self CUDA %", 12, function(e) return pct(e.self_cuda_time_total, self_cuda) end },
      { "CUDA total", 12, function(e) return time_str(e.cuda_time_total) end },
      { "CUDA time avg", 12, function(e) return time_str(e.cuda_time) end } }) do cols[#cols + 1] = c end
  end
  if self.profile_memory then -- as PyTorch: the CUDA ones where some event allocated there
    for _, f in ipairs({ { "CPU Mem", "cpu_memory_usage" }, { "Self CPU Mem", "self_cpu_memory_usage" },
      cuda_mem and { "CUDA Mem", "cuda_memory_usage" } or nil, cuda_mem and { "Self CUDA Mem", "self_cuda_memory_usage" } or nil }) do
      cols[#cols + 1] = { f[1], 12, function(e) return memory_str(e[f[2]]) end }
    end
  end
  cols[#cols + 1] = { "# of Calls", 12, function(e) return tostring(e.count) end }
  if shapes then
    cols[#cols + 1] = { "Input Shapes", o.max_shapes_column_width, function(e) return e.input_shapes end }
  end
  if stacks then -- the innermost frame on the row, the callers on lines of their own below it
    cols[#cols + 1] = { "Source Location", o.max_src_column_width, function(e) return e.stack[1] or "" end }
  end
  local function line(f)
    local parts = {}
    for i, c in ipairs(cols) do
      local left = i == 1 or c[1] == "Input Shapes" or c[1] == "Source Location"
      parts[i] = string.format((left and "%-" or "%") .. c[2] .. "s", f(c))
    end
    return (table.concat(parts, "  "):gsub("%s+$", ""))
  end
  local rule = line(function(c) return string.rep("-", c[2]) end)
  local out = {}
  if o.header then out[#out + 1] = o.header end
  out[#out + 1] = rule
  out[#out + 1] = line(function(c) return c[1] end)
  out[#out + 1] = rule
  for i, e in ipairs(rows) do
    if o.row_limit and o.row_limit >= 0 and i > o.row_limit then break end
    out[#out + 1] = line(function(c) return c[3](e) end)
    for k = 2, #e.stack do out[#out + 1] = line(function(c) return c[1] == "Source Location" and e.stack[k] or "" end) end
  end
  out[#out + 1] = rule
  out[#out + 1] = "Self CPU time total: " .. time_str(self_cpu)
  if any_cuda then out[#out + 1] = "Self CUDA time total: " .. time_str(self_cuda) end
  return table.concat(out, "\n") .. "\n"
end
EventList.__tostring = EventList.table

-- ---- profile ----

local Profile = { __name = "torch.profiler.profile" }
Profile.__index = Profile

-- with a schedule, each step is a range "ProfilerStep#<n>", as in PyTorch
local function mark_step(p)
  if p.step_range then C.pop(p.step_range) end
  p.step_range = p.schedule and C.push("ProfilerStep#" .. p.step_num) or nil
end

local function begin(p)
  C.start(p.cuda, p.record_shapes, p.with_stack, p.profile_memory)
  p.recording, p.raw, p.step_range = true, nil, nil
  mark_step(p)
end

local function finish(p)
  if p.step_range then C.pop(p.step_range) end
  C.stop()
  p.recording = false
  p.raw, p.events_cache = C.events(), nil
end

local function trace_ready(p) if p.on_trace_ready then p.on_trace_ready(p) end end

-- profile({activities=, schedule=, on_trace_ready=, record_shapes=false, profile_memory=false,
-- with_stack=false}); use_cuda= as torch.autograd.profiler.profile's. with_stack keeps each op's
-- calling frames (the program's Lua, not the library's). profile_memory records each allocation
-- and free of tensor storage (the bytes of the storage, on its device) in the op or range open
-- then. FLOP and module recording are not kept here: asking for them is an error.
function P.profile(...)
  local o = U.parse("profile", { { "activities", nil }, { "schedule", nil }, { "on_trace_ready", nil },
    { "record_shapes", false }, { "profile_memory", false }, { "with_stack", false }, { "with_flops", false },
    { "with_modules", false }, { "use_cuda", nil }, { "use_device", nil }, { "enabled", true } }, ...)
  for _, k in ipairs({ "with_flops", "with_modules" }) do
    if o[k] then U.errorf("profile: %s=true is not supported: nnrepl's profiler records op times, input shapes, stacks and memory only", k) end
  end
  local cuda = torch.cuda.is_available()
  if o.activities ~= nil then
    if type(o.activities) ~= "table" then U.errorf("profile: activities must be a list of ProfilerActivity, got %s", U.typename(o.activities)) end
    cuda = false
    for _, a in ipairs(o.activities) do
      if a == "CUDA" then cuda = true
      elseif a ~= "CPU" then U.errorf("profile: unknown activity %s (ProfilerActivity.CPU or ProfilerActivity.CUDA)", tostring(a)) end
    end
  end
  if o.use_cuda ~= nil then cuda = o.use_cuda and true or false end
  if o.use_device ~= nil then cuda = o.use_device == "cuda" end
  if o.schedule ~= nil and type(o.schedule) ~= "function" then U.errorf("profile: schedule must be a function of the step number, got %s", U.typename(o.schedule)) end
  if o.on_trace_ready ~= nil and type(o.on_trace_ready) ~= "function" then
    U.errorf("profile: on_trace_ready must be a function, got %s", U.typename(o.on_trace_ready))
  end
  local p = setmetatable({ cuda = cuda, record_shapes = o.record_shapes and true or false, with_stack = o.with_stack and true or false,
    profile_memory = o.profile_memory and true or false, schedule = o.schedule,
    on_trace_ready = o.on_trace_ready, step_num = 0, enabled = o.enabled, recording = false }, Profile)
  p:start()
  return p
end

-- start(): begins the first step (profile already did, so then it does nothing)
function Profile:start()
  if self.started or not self.enabled then return self end
  if C.running() then U.error("profile: another profiler is running on this thread") end
  self.started = true
  self.action = self.schedule and self.schedule(self.step_num) or Action.RECORD
  if self.action ~= Action.NONE then begin(self) end
  return self
end

-- step(): the end of a training step (moves the schedule on)
function Profile:step()
  if not self.started or self.stopped then return end
  local prev = self.action
  self.step_num = self.step_num + 1
  if not self.schedule then return end
  local cur = self.schedule(self.step_num)
  self.action = cur
  if prev == Action.NONE then
    if cur ~= Action.NONE then begin(self) end
  elseif prev == Action.WARMUP then
    finish(self) -- the warm-up's events are dropped
    self.raw = nil
    if cur ~= Action.NONE then begin(self) end
  else -- RECORD or RECORD_AND_SAVE
    if prev == Action.RECORD_AND_SAVE or cur == Action.NONE or cur == Action.WARMUP then
      finish(self)
      trace_ready(self)
      if cur ~= Action.NONE then begin(self) end
    else
      mark_step(self)
    end
  end
end

function Profile:stop()
  if not self.started or self.stopped then return end
  self.stopped = true
  if self.recording then
    local warmup = self.action == Action.WARMUP
    finish(self)
    if warmup then self.raw = nil else trace_ready(self) end
  end
end
Profile.__close = Profile.stop
Profile.__exit__ = Profile.stop

local function collected(p)
  if p.recording then U.error("profile: still recording; stop() it (or let its <close> variable go) first") end
  if not p.raw then U.error("profile: no events were recorded") end
  p.events_cache = p.events_cache or function_events(p.raw)
  return p.events_cache
end

-- events(): every recorded event (FunctionEvents, in the order they started)
function Profile:events()
  local list = setmetatable({ table.unpack(collected(self)) }, EventList)
  list.profile_memory = self.profile_memory
  return list
end

-- key_averages({group_by_input_shape=false, group_by_stack_n=0}): one entry per name (and input
-- shapes, and the innermost n frames of the calling program with with_stack)
function Profile:key_averages(...)
  local o = U.parse("key_averages", { { "group_by_input_shape", false }, { "group_by_stack_n", 0 } }, ...)
  local n = U.check_int("key_averages", "group_by_stack_n", o.group_by_stack_n, 0)
  if n > 0 and not self.with_stack then U.error("key_averages: group_by_stack_n needs a profile made with with_stack=true") end
  local list = average(collected(self), o.group_by_input_shape, n)
  list.profile_memory = self.profile_memory
  return list
end

local function device_id(device) return tonumber(device:match(":(%d+)$")) end

-- export_chrome_trace(path): the events in the Chrome trace format (chrome://tracing, Perfetto).
-- Threads: 1 this one, 2 the collectives Gloo runs on its own thread; on a GPU, 7 the ops' stream
-- and 8 the collectives'. profile_memory adds PyTorch's "[memory]" instant events.
function Profile:export_chrome_trace(path)
  local evs = collected(self)
  local out, gpus = {}, {}
  local function add(cat, e, pid, tid, ts, dur, args)
    out[#out + 1] = string.format('{"ph": "X", "cat": %s, "name": %s, "pid": %d, "tid": %d, "ts": %s, "dur": %s%s}',
      json.string(cat), json.string(e.name), pid, tid, json.float(ts), json.float(dur), args or "")
  end
  for _, e in ipairs(evs) do
    local a = {}
    if e.input_shapes ~= "" then a[#a + 1] = '"Input Dims": ' .. json.string(e.input_shapes) end
    if #e.stack > 0 then a[#a + 1] = '"Call stack": ' .. json.string(table.concat(e.stack, ";")) end
    local args = #a > 0 and ', "args": {' .. table.concat(a, ", ") .. "}" or nil
    local comm = e.kind == "comm"
    if e.kind ~= "memory" then
      add((e.kind == "range" or comm) and "user_annotation" or "cpu_op", e, 0, e.async and 2 or 1, e.start_us, e.cpu_time_total, args)
    end
    if e.device_us then
      local d = device_id(e.device) or 0
      gpus[d] = true
      add(comm and "gpu_user_annotation" or "kernel", e, 1 + d, comm and 8 or 7, e.device_start_us, e.device_us)
    end
  end
  for _, r in ipairs(self.raw) do
    if r.kind == "memory" then
      out[#out + 1] = string.format('{"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 0, "tid": 1, "ts": %s, '
        .. '"args": {"Total Reserved": %d, "Total Allocated": %d, "Bytes": %d, "Addr": %d, "Device Type": %d, "Device Id": %d}}',
        json.float(r.start_us), r.total_reserved, r.total_allocated, r.bytes, r.addr, device_id(r.device) and 1 or 0, device_id(r.device) or -1)
    end
  end
  out[#out + 1] = '{"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "CPU"}}'
  for d in pairs(gpus) do
    out[#out + 1] = string.format('{"ph": "M", "name": "process_name", "pid": %d, "args": {"name": "GPU %d"}}', 1 + d, d)
  end
  local f, err = io.open(path, "w")
  if not f then U.errorf("export_chrome_trace: cannot write '%s': %s", tostring(path), tostring(err)) end
  f:write('{"traceEvents": [\n', table.concat(out, ",\n"), "\n]}\n")
  f:close()
end

-- export_memory_timeline(path, device): the memory held on device over the profile, as
-- PyTorch's: a .json (any suffix but .html and .gz) holds [times, sizes], times in whole
-- microseconds where memory changed, sizes a row of 9 per time: a leading 0, then bytes by
-- category (PARAMETER, OPTIMIZER_STATE, INPUT, TEMPORARY, ACTIVATION, GRADIENT, AUTOGRAD_DETAIL,
-- unknown). nnrepl does not sort tensors into categories (PyTorch works them out from the
-- profiled graph), so all bytes are in the last, unknown one; frees of storage allocated before
-- the profile started are left out. .html (a matplotlib plot) prints what PyTorch prints
-- without matplotlib; .gz is not written (no gzip here). device defaults to "cuda:0" with a GPU,
-- else "cpu". Needs record_shapes, profile_memory and with_stack, as PyTorch's.
function Profile:export_memory_timeline(path, device)
  local missing = {}
  for _, k in ipairs({ "record_shapes", "profile_memory", "with_stack" }) do
    if not self[k] then missing[#missing + 1] = k .. "=True" end
  end
  if #missing > 0 then U.errorf("%s required for memory profiling.", table.concat(missing, ", ")) end
  if type(path) ~= "string" then U.errorf("export_memory_timeline: path must be a string, got %s", U.typename(path)) end
  device = tostring(torch.device(device or (torch.cuda.is_available() and "cuda:0" or "cpu")))
  if path:sub(-5) == ".html" then
    print("export_memory_timeline_html failed because matplotlib was not found.")
    return
  end
  if path:sub(-3) == ".gz" then U.errorf("export_memory_timeline: gzip output is not supported here; use a .json path") end
  collected(self)
  local times, sizes, live = {}, {}, {}
  for _, r in ipairs(self.raw) do
    if r.kind == "memory" and r.device == device and (r.bytes > 0 or live[r.addr]) then
      local t = math.floor(r.start_us)
      if #times == 0 or t ~= times[#times] then
        local row = {}
        for i = 1, 9 do row[i] = #sizes > 0 and sizes[#sizes][i] or 0 end
        times[#times + 1], sizes[#sizes + 1] = t, row
      end
      local row = sizes[#sizes]
      if r.bytes > 0 then live[r.addr] = r.bytes; row[9] = row[9] + r.bytes
      else row[9] = row[9] - live[r.addr]; live[r.addr] = nil end
    end
  end
  local f, err = io.open(path, "w")
  if not f then U.errorf("export_memory_timeline: cannot write '%s': %s", path, tostring(err)) end
  local rows = {}
  for i, row in ipairs(sizes) do rows[i] = "[" .. table.concat(row, ", ") .. "]" end
  f:write("[[", table.concat(times, ", "), "], [", table.concat(rows, ", "), "]]")
  f:close()
end

-- tensorboard_trace_handler(dir_name, worker_name=host_pid): an on_trace_ready writing
-- <dir_name>/<worker_name>.<ms>.pt.trace.json, where TensorBoard's profiler plugin finds it
function P.tensorboard_trace_handler(...)
  local o = U.parse("tensorboard_trace_handler", { { "dir_name", U.REQUIRED }, { "worker_name", nil }, { "use_gzip", false } }, ...)
  if o.use_gzip then U.error("tensorboard_trace_handler: use_gzip=true is not supported") end
  local io_ = torch._io
  local worker = o.worker_name or (io_.hostname() .. "_" .. io_.getpid())
  return function(prof)
    io_.makedirs(o.dir_name)
    local ms = math.floor(require("time").time() * 1e3)
    prof:export_chrome_trace(string.format("%s/%s.%d.pt.trace.json", o.dir_name, worker, ms))
  end
end

-- emit_nvtx({enabled=true, record_shapes=false} [, fn]): while open, every op, autograd node and
-- record_function of this thread runs inside an NVTX range of its name (with record_shapes, its
-- inputs' sizes: "conv2d, sizes = [[64, 3, 227, 227], ...]"), for Nsight Systems and Nsight
-- Compute (ncu --nvtx --nvtx-include "conv2d/"). Nothing is recorded, and torch.profiler cannot
-- run meanwhile.
function P.emit_nvtx(...)
  local fn, args, n = U.pop_fn(...)
  local o = U.parse("emit_nvtx", { { "enabled", true }, { "record_shapes", false } }, table.unpack(args, 1, n))
  if not o.enabled then return U.scoped(function() end, fn) end
  U.call(C.start_nvtx, o.record_shapes)
  return U.scoped(C.stop, fn)
end

torch.autograd.profiler = { profile = P.profile, record_function = P.record_function, emit_nvtx = P.emit_nvtx }
