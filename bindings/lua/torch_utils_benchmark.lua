-- torch.utils.benchmark.Timer and Measurement, as PyTorch's: a statement (a Lua function, or
-- Lua source run with `globals` as its environment) timed in blocks of `number` runs with a
-- monotonic clock; CUDA work is synchronized before and after each block, so a block's time
-- covers the kernels it queued. Also torch.seed().
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

local function sync()
  if torch.cuda and torch.cuda.is_available() then torch.cuda.synchronize() end
end

-- the q-quantile of a sorted list with linear interpolation (numpy's default)
local function quantile(sorted, q)
  local pos = (#sorted - 1) * q + 1
  local lo = math.floor(pos)
  local hi = math.min(lo + 1, #sorted)
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo)
end

local function with_unit(t)
  if t < 1e-6 then return t * 1e9, "ns" end
  if t < 1e-3 then return t * 1e6, "us" end
  if t < 1 then return t * 1e3, "ms" end
  return t, "s"
end

-- ---- Measurement ----

local Measurement = {}
Measurement.__index = function(self, k)
  local f = rawget(Measurement, "_" .. k)
  if f then return f(self) end
  return Measurement[k]
end
Measurement.__name = "torch.utils.benchmark.utils.common.Measurement"
benchmark.Measurement = Measurement

-- number_per_run: runs per block; raw_times: each block's total seconds
function Measurement.new(number_per_run, raw_times, task)
  return setmetatable({ number_per_run = number_per_run, raw_times = raw_times, task_spec = task }, Measurement)
end
function Measurement:_times()
  local out = {}
  for i, t in ipairs(self.raw_times) do out[i] = t / self.number_per_run end
  return out
end
local function sorted_times(self)
  local s = self.times
  table.sort(s)
  return s
end
function Measurement:_mean()
  local s = 0
  for _, t in ipairs(self.times) do s = s + t end
  return s / #self.raw_times
end
function Measurement:_median() return quantile(sorted_times(self), 0.5) end
function Measurement:_iqr()
  local s = sorted_times(self)
  return quantile(s, 0.75) - quantile(s, 0.25)
end
function Measurement:_title() return self.task_spec.label or self.task_spec.stmt_text end

function Measurement:__tostring()
  local t = self.task_spec
  local lines = { string.format("<%s object at %p>", Measurement.__name, self) }
  if t.label then lines[#lines + 1] = t.label .. (t.sub_label and (": " .. t.sub_label) or "") end
  if t.description then lines[#lines + 1] = t.description end
  lines[#lines + 1] = t.stmt_text
  if t.setup_text ~= "pass" then lines[#lines + 1] = "setup: " .. t.setup_text end
  -- PyTorch's layout: "Median: " and the IQR line from 2 and 4 measurements on, "runs ," for one
  local n = #self.raw_times
  local median, unit = with_unit(self.median)
  local scale = median / self.median
  lines[#lines + 1] = string.format("  %s%.2f %s", n > 1 and "Median: " or "", median, unit)
  if n >= 4 then
    local s = sorted_times(self)
    lines[#lines + 1] = string.format("  IQR:    %.2f %s (%.2f to %.2f)", self.iqr * scale, unit,
      quantile(s, 0.25) * scale, quantile(s, 0.75) * scale)
  end
  lines[#lines + 1] = string.format("  %d measurement%s, %d runs %s %d thread%s", n, n > 1 and "s" or "",
    self.number_per_run, n > 1 and "per measurement," or ",", t.num_threads, t.num_threads > 1 and "s" or "")
  return table.concat(lines, "\n")
end

-- ---- Timer ----

local Timer = {}
Timer.__index = Timer
Timer.__name = "torch.utils.benchmark.Timer"
benchmark.Timer = setmetatable(Timer, { __call = function(cls, ...) return cls.new(...) end })

local function compile(what, code, env)
  if type(code) == "function" then return code, "<function>" end
  if type(code) ~= "string" then U.errorf("Timer: %s must be a function or Lua source, got %s", what, type(code)) end
  if code == "pass" then return function() end, code end
  local f, err = load(code, "=" .. what, "t", env)
  if not f then U.errorf("Timer: %s does not compile: %s", what, err) end
  return f, code
end

-- Timer(stmt, setup, {globals =, label =, sub_label =, description =, num_threads =})
function Timer.new(...)
  local o = U.parse("Timer", { { "stmt", "pass" }, { "setup", "pass" }, { "global_setup", "" }, { "timer" }, { "globals" },
    { "label" }, { "sub_label" }, { "description" }, { "env" }, { "num_threads", 1 }, { "language", "python" } }, ...)
  local env = setmetatable(o.globals or {}, { __index = _G })
  local self = setmetatable({}, Timer)
  self._stmt, self._stmt_text = compile("stmt", o.stmt, env)
  self._setup, self._setup_text = compile("setup", o.setup, env)
  self._clock = o.timer or clock
  self._task = { stmt_text = self._stmt_text, setup_text = self._setup_text, label = o.label, sub_label = o.sub_label,
    description = o.description, num_threads = o.num_threads }
  return self
end

-- seconds for `number` runs of stmt after setup (synchronized)
function Timer:_timeit(number)
  self._setup()
  sync()
  local t0 = self._clock()
  local stmt = self._stmt
  for _ = 1, number do stmt() end
  sync()
  return self._clock() - t0
end

function Timer:timeit(number)
  number = number or 1000000
  if math.type(number) ~= "integer" or number < 1 then U.errorf("timeit: number must be a positive integer, got %s", tostring(number)) end
  self:_timeit(math.min(number, 3)) -- warm-up
  return Measurement.new(number, { self:_timeit(number) }, self._task)
end

-- runs per block: grown tenfold until the clock's overhead is negligible and a block takes min_run_time / 1000
function Timer:_block_size(min_run_time)
  local overheads = {}
  for i = 1, 5 do overheads[i] = self:_timeit(0) end
  table.sort(overheads)
  local overhead, number = overheads[3], 1
  while true do
    local taken = self:_timeit(number)
    if (overhead / math.max(taken, 1e-12) <= 1e-4 and taken >= min_run_time / 1000) or taken > min_run_time then break end
    if number * 10 > 2147483647 then break end
    number = number * 10
  end
  return number
end

function Timer:blocked_autorange(...)
  local o = U.parse("blocked_autorange", { { "callback" }, { "min_run_time", 0.2 } }, ...)
  local number = self:_block_size(o.min_run_time)
  local times, total = {}, 0
  while total < o.min_run_time or #times == 0 do
    local t = self:_timeit(number)
    times[#times + 1], total = t, total + t
    if o.callback then o.callback(number, t) end
  end
  return Measurement.new(number, times, self._task)
end

-- autorange: blocks of growing size until one takes at least 0.2 s (Python's timeit.autorange)
function Timer:autorange(callback)
  local number = 1
  while true do
    for _, k in ipairs({ 1, 2, 5 }) do
      local n = number * k
      local t = self:_timeit(n)
      if callback then callback(n, t) end
      if t >= 0.2 then return Measurement.new(n, { t }, self._task) end
    end
    number = number * 10
  end
end

return benchmark
