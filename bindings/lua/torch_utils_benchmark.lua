-- torch.utils.benchmark.Timer, Measurement and TaskSpec, as PyTorch's: a statement (a Lua
-- function, or Lua source run with a copy of `globals` as its environment; an expression such as
-- "x * y" is accepted as Python's stmt is) timed in blocks of `number` runs with a monotonic
-- clock, with torch's thread count set to num_threads while it runs; CUDA work is synchronized
-- before and after each block, so a block's time covers the kernels it queued. Measurement's
-- statistics (numpy's median, mean and linear-interpolation percentiles), significant_figures,
-- warnings and printout follow torch/utils/benchmark/utils/common.py. Also torch.seed().
-- Compare is in torch_utils_benchmark_compare.lua, Fuzzer in torch_utils_benchmark_fuzzer.lua.
local torch = require "torch"
local U = require "nn_util"
local clock = require("time").perf_counter

-- torch.seed(): a fresh non-deterministic seed for the default generator, returned
function torch.seed()
  local s = torch.Generator():seed()
  torch.manual_seed(s)
  return s
end

torch.utils = torch.utils or {}
local benchmark = {}
torch.utils.benchmark = benchmark
local common = {}
benchmark._common = common

local function sync()
  if torch.cuda and torch.cuda.is_available() then torch.cuda.synchronize() end
end

-- ---- text helpers (Python's textwrap.dedent / indent, str.rstrip) ----

local function split_lines(s)
  local out = {}
  for line in (s .. "\n"):gmatch("(.-)\n") do out[#out + 1] = line end
  return out
end

-- textwrap.dedent: the common leading whitespace of the non-blank lines removed; blank lines emptied
function common.dedent(s)
  local lines, margin = split_lines(s), nil
  for _, l in ipairs(lines) do
    if l:find("%S") then
      local ws = l:match("^[ \t]*")
      if margin == nil then margin = ws
      else
        local n = 0
        while n < #margin and n < #ws and margin:sub(n + 1, n + 1) == ws:sub(n + 1, n + 1) do n = n + 1 end
        margin = margin:sub(1, n)
      end
    end
  end
  for i, l in ipairs(lines) do
    if not l:find("%S") then lines[i] = "" elseif margin then lines[i] = l:sub(#margin + 1) end
  end
  return table.concat(lines, "\n")
end

-- textwrap.indent: the prefix before every line that is not whitespace only
function common.indent(s, prefix)
  local lines = split_lines(s)
  for i, l in ipairs(lines) do if l:find("%S") then lines[i] = prefix .. l end end
  return table.concat(lines, "\n")
end

-- Timer's clean-up of a source snippet: dedented, one leading newline dropped, trailing space stripped
local function tidy(s)
  s = common.dedent(s)
  if s:sub(1, 1) == "\n" then s = s:sub(2) end
  return (s:gsub("%s+$", ""))
end

-- ---- statistics (numpy's, on a sorted list) ----

-- the q-quantile with linear interpolation (np.percentile's default)
local function quantile(sorted, q)
  local pos = (#sorted - 1) * q + 1
  local lo = math.floor(pos)
  local hi = math.min(lo + 1, #sorted)
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo)
end
common.quantile = quantile

-- select_unit: the unit that puts t in [1, 1000), from floor(log10(t) / 3); returns unit, scale
function common.select_unit(t)
  local unit = ({ [-3] = "ns", [-2] = "us", [-1] = "ms" })[math.floor(math.log(t, 10) // 3)] or "s"
  return unit, ({ ns = 1e-9, us = 1e-6, ms = 1e-3, s = 1 })[unit]
end

function common.unit_to_english(u)
  return ({ ns = "nanosecond", us = "microsecond", ms = "millisecond", s = "second" })[u]
end

-- round half to even (np.round)
local function round_even(v)
  local r = math.floor(v + 0.5)
  if r - v == 0.5 and r % 2 ~= 0 then r = r - 1 end
  return r
end

-- trim_sigfig: x kept to n significant figures (3.14159, 2 -> 3.1)
function common.trim_sigfig(x, n)
  local magnitude = math.ceil(math.log(math.abs(x), 10))
  local scale = 10.0 ^ (magnitude - n)
  return round_even(x / scale) * scale
end

-- ---- TaskSpec ----

local TASK_FIELDS = { "stmt", "setup", "global_setup", "label", "sub_label", "description", "env", "num_threads" }
local TaskSpec = {}
TaskSpec.__index = TaskSpec
TaskSpec.__name = "torch.utils.benchmark.utils.common.TaskSpec"
benchmark.TaskSpec = setmetatable(TaskSpec, { __call = function(cls, ...) return cls.new(...) end })

-- TaskSpec(stmt, setup, {global_setup =, label =, sub_label =, description =, env =, num_threads = 1})
function TaskSpec.new(...)
  local o = U.parse("TaskSpec", { { "stmt" }, { "setup" }, { "global_setup", "" }, { "label" }, { "sub_label" },
    { "description" }, { "env" }, { "num_threads", 1 } }, ...)
  return setmetatable(o, TaskSpec)
end

-- a key equal for equal specs (the dataclass's __eq__), for Measurement.merge
function TaskSpec:_key()
  local parts = {}
  for i, f in ipairs(TASK_FIELDS) do parts[i] = self[f] == nil and "\0nil" or tostring(self[f]) end
  return table.concat(parts, "\0\1")
end

function TaskSpec:_title()
  local sub = (self.sub_label and self.sub_label ~= "") and (": " .. self.sub_label) or ""
  if self.label ~= nil then return self.label .. sub end
  if not self.stmt:find("\n", 1, true) then return self.stmt .. sub end
  return "stmt:" .. ((self.sub_label and self.sub_label ~= "") and (" (" .. self.sub_label .. ")") or "") .. "\n"
    .. common.indent(self.stmt, "  ")
end
TaskSpec.__index = function(self, k)
  if k == "title" then return TaskSpec._title(self) end
  return TaskSpec[k]
end

function TaskSpec:setup_str()
  local s = self.setup
  if s == nil or s == "pass" or s == "" then return "" end
  if s:find("\n", 1, true) then return "setup:\n" .. common.indent(s, "  ") end
  return "setup: " .. s
end

-- the task's part of a printout: title, description, setup; a multi-line section ends in a blank line
function TaskSpec:summarize()
  local out = {}
  for _, s in ipairs({ self.title, self.description or "", self:setup_str() }) do
    if s ~= "" then out[#out + 1] = s:find("\n", 1, true) and (s .. "\n") or s end
  end
  return table.concat(out, "\n")
end

-- ---- Measurement ----

local IQR_WARN, IQR_GROSS_WARN = 0.1, 0.25
local MAX_SIGFIGS, MIN_CONFIDENCE_INTERVAL = 4, 25e-9

local Measurement = {}
local task_field = {}
for _, f in ipairs(TASK_FIELDS) do task_field[f] = true end
Measurement.__index = function(self, k)
  local f = rawget(Measurement, "_" .. k)
  if f then return f(self) end
  if task_field[k] then return rawget(self, "task_spec")[k] end -- the TaskSpec's fields, forwarded
  return Measurement[k]
end
Measurement.__name = "torch.utils.benchmark.utils.common.Measurement"
benchmark.Measurement = setmetatable(Measurement, { __call = function(cls, ...) return cls.new(...) end })

-- Measurement(number_per_run, raw_times, task_spec, metadata): raw_times are each block's total seconds
-- (or one keyword table); a plain table as task_spec holds TaskSpec's fields
function Measurement.new(number_per_run, raw_times, task_spec, metadata)
  if U.is_opts(number_per_run) and raw_times == nil then
    local o = number_per_run
    number_per_run, raw_times, task_spec, metadata = o.number_per_run, o.raw_times, o.task_spec, o.metadata
  end
  if math.type(number_per_run) ~= "integer" then U.errorf("Measurement: number_per_run must be an integer, got %s", U.typename(number_per_run)) end
  if type(raw_times) ~= "table" then U.errorf("Measurement: raw_times must be a list of seconds, got %s", U.typename(raw_times)) end
  if getmetatable(task_spec) ~= TaskSpec then
    if type(task_spec) ~= "table" then U.errorf("Measurement: task_spec must be a TaskSpec, got %s", U.typename(task_spec)) end
    local t = task_spec
    task_spec = TaskSpec.new(t.stmt, t.setup, { global_setup = t.global_setup, label = t.label, sub_label = t.sub_label,
      description = t.description, env = t.env, num_threads = t.num_threads })
  end
  return setmetatable({ number_per_run = number_per_run, raw_times = raw_times, task_spec = task_spec, metadata = metadata }, Measurement)
end

function Measurement:_times()
  local out = {}
  for i, t in ipairs(self.raw_times) do out[i] = t / self.number_per_run end
  return out
end

-- sorted times, median, mean, p25, p75 (computed once)
local function stats(self)
  local s = rawget(self, "_stats")
  if s then return s end
  local sorted = self.times
  table.sort(sorted)
  local sum = 0
  for _, t in ipairs(sorted) do sum = sum + t end
  s = { sorted = sorted, median = quantile(sorted, 0.5), mean = sum / #sorted, p25 = quantile(sorted, 0.25),
    p75 = quantile(sorted, 0.75) }
  rawset(self, "_stats", s)
  return s
end
function Measurement:_median() return stats(self).median end
function Measurement:_mean() return stats(self).mean end
function Measurement:_iqr() local s = stats(self); return s.p75 - s.p25 end
function Measurement:_title() return self.task_spec.title end
function Measurement:_as_row_name() return self.sub_label or self.stmt or "[Unknown]" end

function Measurement:meets_confidence(threshold)
  return self.iqr / self.median < (threshold or IQR_WARN)
end

function Measurement:_warnings()
  local msg
  if not self:meets_confidence(IQR_GROSS_WARN) then msg = "This suggests significant environmental influence."
  elseif not self:meets_confidence(IQR_WARN) then msg = "This could indicate system fluctuation." end
  if not msg then return {} end
  return { string.format("  WARNING: Interquartile range is %.1f%% of the median measurement.\n           %s",
    self.iqr / self.median * 100, msg) }
end
function Measurement:_has_warnings() return #self.warnings > 0 end

-- significant figures the interquartile points support (a 90% interval of their mean), 1 to 4
function Measurement:_significant_figures()
  local s = stats(self)
  local n = #s.sorted
  local pts = {}
  for i = n // 4 + 1, math.ceil(3 * n / 4) do pts[#pts + 1] = s.sorted[i] end
  local mean = 0
  for _, t in ipairs(pts) do mean = mean + t end
  mean = mean / #pts
  local var = 0
  for _, t in ipairs(pts) do var = var + (t - mean) ^ 2 end
  local std = math.sqrt(var / #pts)
  local ci = math.max(1.645 * std / math.sqrt(#pts), MIN_CONFIDENCE_INTERVAL)
  local figs = math.floor(math.log(s.median / ci, 10))
  return math.min(math.max(figs, 1), MAX_SIGFIGS)
end

function Measurement:__tostring()
  local s = stats(self)
  local n = #s.sorted
  local unit, scale = common.select_unit(s.median)
  local lines = { string.format("<%s object at %p>", Measurement.__name, self), self.task_spec:summarize(),
    string.format("  %s%.2f %s", n > 1 and "Median: " or "", s.median / scale, unit) }
  if n >= 4 then
    lines[#lines + 1] = string.format("  IQR:    %.2f %s (%.2f to %.2f)", self.iqr / scale, unit, s.p25 / scale, s.p75 / scale)
  end
  local th = self.num_threads
  lines[#lines + 1] = string.format("  %d measurement%s, %d runs %s %d thread%s", n, n > 1 and "s" or "",
    self.number_per_run, n > 1 and "per measurement," or ",", th, th > 1 and "s" or "")
  lines[#lines + 1] = table.concat(self.warnings, "\n")
  return (table.concat(lines, "\n"):gsub("^%s+", ""):gsub("%s+$", ""))
end

-- merge: replicates (equal task specs) pooled into one Measurement of number_per_run 1, in first-seen order
function Measurement.merge(measurements)
  local order, groups = {}, {}
  for _, m in ipairs(measurements) do
    local k = m.task_spec:_key()
    if not groups[k] then groups[k] = { spec = m.task_spec, times = {} }; order[#order + 1] = k end
    for _, t in ipairs(m.times) do table.insert(groups[k].times, t) end
  end
  local out = {}
  for i, k in ipairs(order) do out[i] = Measurement.new(1, groups[k].times, groups[k].spec) end
  return out
end

function benchmark.is_measurement(v) return getmetatable(v) == Measurement end

-- ---- Timer ----

local Timer = {}
Timer.__index = Timer
Timer.__name = "torch.utils.benchmark.Timer"
benchmark.Timer = setmetatable(Timer, { __call = function(cls, ...) return cls.new(...) end })

-- a snippet compiled in env: a statement, or failing that an expression (Python's "x * y")
local function compile(what, code, env)
  if type(code) == "function" then return code, "<function>" end
  if type(code) ~= "string" then U.errorf("Timer: %s must be a function or Lua source, got %s", what, type(code)) end
  code = tidy(code)
  if code == "pass" or code == "" then return function() end, code end
  local f, err = load(code, "=" .. what, "t", env)
  if not f then
    f = load("return " .. code, "=" .. what, "t", env)
    if not f then U.errorf("Timer: %s does not compile: %s", what, err) end
  end
  return f, code
end

-- Timer(stmt, setup, {globals =, label =, sub_label =, description =, env =, num_threads =, timer =})
function Timer.new(...)
  local o = U.parse("Timer", { { "stmt", "pass" }, { "setup", "pass" }, { "global_setup" }, { "timer" }, { "globals" },
    { "label" }, { "sub_label" }, { "description" }, { "env" }, { "num_threads", 1 }, { "language", "python" } }, ...)
  if o.language ~= "python" and o.language ~= "py" and o.language ~= "lua" then
    U.errorf("Timer: language %s is not supported (only Lua snippets run here)", tostring(o.language))
  end
  if o.global_setup ~= nil then U.errorf("global_setup is C++ only, got `%s`", tostring(o.global_setup)) end
  -- a copy of globals, so that setup's assignments do not leak (PyTorch copies the dict too)
  local g = {}
  for k, v in pairs(o.globals or {}) do g[k] = v end
  local env = setmetatable(g, { __index = _G })
  local self = setmetatable({ _globals = g }, Timer)
  local stmt_text, setup_text
  self._stmt, stmt_text = compile("stmt", o.stmt, env)
  self._setup, setup_text = compile("setup", o.setup, env)
  self._clock = o.timer or clock
  self._task_spec = TaskSpec.new(stmt_text, setup_text, { label = o.label, sub_label = o.sub_label,
    description = o.description, env = o.env, num_threads = o.num_threads })
  return self
end

-- f() run with torch's thread count at the task's num_threads, restored afterwards
function Timer:_with_threads(f)
  local prior = torch.get_num_threads()
  torch.set_num_threads(self._task_spec.num_threads)
  local ok, a = pcall(f)
  torch.set_num_threads(prior)
  if not ok then error(a, 0) end
  return a
end

-- seconds for `number` runs of stmt after setup (synchronized); timeit.Timer.timeit's loop
function Timer:_timeit(number)
  self._setup()
  sync()
  local t0 = self._clock()
  local stmt = self._stmt
  for _ = 1, number do stmt() end
  sync()
  return self._clock() - t0
end

-- timeit(number = 1000000): after a warm-up of number // 100 runs (at least one), one block
function Timer:timeit(number)
  number = number or 1000000
  if math.type(number) ~= "integer" or number < 1 then U.errorf("timeit: number must be a positive integer, got %s", tostring(number)) end
  return self:_with_threads(function()
    self:_timeit(math.max(number // 100, 1))
    return Measurement.new(number, { self:_timeit(number) }, self._task_spec)
  end)
end

-- runs per block: grown tenfold until the clock's overhead (median of five empty blocks) is at
-- most 1e-4 of a block and a block takes min_run_time / 1000, or a block exceeds min_run_time
function Timer:_estimate_block_size(min_run_time)
  return self:_with_threads(function()
    local overheads = {}
    for i = 1, 5 do overheads[i] = self:_timeit(0) end
    table.sort(overheads)
    local overhead, number = overheads[3], 1
    while true do
      local taken = self:_timeit(number)
      if overhead / taken <= 1e-4 and taken >= min_run_time / 1000 then break end
      if taken > min_run_time then break end
      number = number * 10
    end
    return number
  end)
end

-- blocks until min_run_time is spent and stop_hook(times) agrees, or max_run_time is passed
function Timer:_measurement_loop(number, stop_hook, min_run_time, max_run_time, callback)
  return self:_with_threads(function()
    local times, total, can_stop = {}, 0.0, false
    while total < min_run_time or not can_stop do
      local t = self:_timeit(number)
      times[#times + 1], total = t, total + t
      if callback then callback(number, t) end
      can_stop = stop_hook(times)
      if max_run_time and total > max_run_time then break end
    end
    return times
  end)
end

function Timer:blocked_autorange(...)
  local o = U.parse("blocked_autorange", { { "callback" }, { "min_run_time", 0.2 } }, ...)
  local number = self:_estimate_block_size(o.min_run_time)
  local times = self:_measurement_loop(number, function() return true end, o.min_run_time, nil, o.callback)
  return Measurement.new(number, times, self._task_spec)
end

-- adaptive_autorange: blocks (sized for 0.05 s) until, past four of them, the IQR is within
-- threshold of the median and min_run_time is spent, or max_run_time is passed
function Timer:adaptive_autorange(...)
  local o = U.parse("adaptive_autorange", { { "threshold", 0.1 }, { "min_run_time", 0.01 }, { "max_run_time", 10.0 },
    { "callback" } }, ...)
  local number = self:_estimate_block_size(0.05)
  local function stop_hook(times)
    if #times > 3 then
      return Measurement.new(number, times, self._task_spec):meets_confidence(o.threshold)
    end
    return false
  end
  local times = self:_measurement_loop(number, stop_hook, o.min_run_time, o.max_run_time, o.callback)
  return Measurement.new(number, times, self._task_spec)
end

-- autorange: blocks of 1, 2, 5, 10, 20, ... runs until one takes at least 0.2 s (Python's
-- timeit.Timer.autorange; PyTorch's Timer raises NotImplementedError here)
function Timer:autorange(callback)
  local n, t = require("timeit")._autorange(function(k) return self:_timeit(k) end, callback)
  return Measurement.new(n, { t }, self._task_spec)
end

function Timer:collect_callgrind()
  U.errorf("Timer.collect_callgrind: Callgrind instruction counts are not available in nnrepl")
end

benchmark.Language = { PYTHON = "python", CPP = "cpp" }

return benchmark
