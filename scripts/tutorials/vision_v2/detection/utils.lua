-- torchvision's references/detection/utils.py in Lua: SmoothedValue, MetricLogger (its log_every
-- prints the same lines), collate_fn, reduce_dict, the distributed queries, mkdir.
local torch = require "torch"
local time = require "time"
local dist = torch.distributed

local M = {}

-- "0:01:05", as Python's str(datetime.timedelta(seconds=n))
local function timedelta(seconds)
  local s = math.floor(seconds)
  return string.format("%d:%02d:%02d", s // 3600, s // 60 % 60, s % 60)
end

-- a format "{median:.4f} ({global_avg:.4f})": each {name:spec} becomes string.format("%spec", v)
local function pyformat(fmt, values)
  return (fmt:gsub("{([%w_]+):?([^}]*)}", function(name, spec)
    local v = values[name]
    if spec == "" then return tostring(v) end
    return string.format("%" .. spec, v)
  end))
end

-- ---- SmoothedValue: the values' last window_size entries and the running total ----
local SmoothedValue = {}
SmoothedValue.__index = SmoothedValue
M.SmoothedValue = SmoothedValue
setmetatable(SmoothedValue, {__call = function(_, opts)
  opts = opts or {}
  return setmetatable({window = {}, window_size = opts.window_size or 20, total = 0.0, count = 0,
    fmt = opts.fmt or "{median:.4f} ({global_avg:.4f})"}, SmoothedValue)
end})

function SmoothedValue:update(value, n)
  n = n or 1
  table.insert(self.window, value)
  if #self.window > self.window_size then table.remove(self.window, 1) end
  self.count, self.total = self.count + n, self.total + value * n
end
function SmoothedValue:median() return torch.tensor(self.window):median():item() end
function SmoothedValue:avg() return torch.tensor(self.window, {dtype = torch.float32}):mean():item() end
function SmoothedValue:global_avg() return self.total / self.count end
function SmoothedValue:max() return math.max(table.unpack(self.window)) end
function SmoothedValue:value() return self.window[#self.window] end
function SmoothedValue:__tostring()
  return pyformat(self.fmt, {median = self:median(), avg = self:avg(), global_avg = self:global_avg(),
    max = self:max(), value = self:value()})
end

function M.is_dist_avail_and_initialized() return dist ~= nil and dist.is_available() and dist.is_initialized() end
function M.get_world_size() return M.is_dist_avail_and_initialized() and dist.get_world_size() or 1 end
function M.get_rank() return M.is_dist_avail_and_initialized() and dist.get_rank() or 0 end
function M.is_main_process() return M.get_rank() == 0 end

-- the values averaged (or summed) over the processes; the dict itself with one process
function M.reduce_dict(input_dict, average)
  local world_size = M.get_world_size()
  if world_size < 2 then return input_dict end
  local names, values = {}, {}
  for k in pairs(input_dict) do names[#names + 1] = k end
  table.sort(names)
  return torch.no_grad(function()
    for i, k in ipairs(names) do values[i] = input_dict[k] end
    local v = torch.stack(values, 0)
    dist.all_reduce(v)
    if average ~= false then v = v / world_size end
    local out = {}
    for i, k in ipairs(names) do out[k] = v[i - 1] end
    return out
  end)
end

-- ---- MetricLogger: named SmoothedValues, printed in the order they first appear ----
local MetricLogger = {}
MetricLogger.__index = MetricLogger
M.MetricLogger = MetricLogger
setmetatable(MetricLogger, {__call = function(_, opts)
  return setmetatable({meters = {}, names = {}, delimiter = (opts or {}).delimiter or "\t"}, MetricLogger)
end})

function MetricLogger:add_meter(name, meter)
  if not self.meters[name] then self.names[#self.names + 1] = name end
  self.meters[name] = meter
end

-- update(name_value_table): tensors are read with :item(); pairs' order is kept for an OrderedDict
function MetricLogger:update(values)
  for k, v in pairs(values) do
    if torch.is_tensor(v) then v = v:item() end
    assert(type(v) == "number", "MetricLogger:update: " .. k .. " is not a number")
    if not self.meters[k] then self:add_meter(k, SmoothedValue()) end
    self.meters[k]:update(v)
  end
end

function MetricLogger:__tostring()
  local parts = {}
  for _, name in ipairs(self.names) do parts[#parts + 1] = name .. ": " .. tostring(self.meters[name]) end
  return table.concat(parts, self.delimiter)
end

-- for ... in logger:log_every(iterable, print_freq, header) do: the iterable's items, a progress
-- line every print_freq iterations and at the last, then the total time
function MetricLogger:log_every(iterable, print_freq, header)
  header = header or ""
  return coroutine.wrap(function()
    local n = #iterable
    local i = 0
    local start_time = time.time()
    local last = time.time()
    local iter_time, data_time = SmoothedValue({fmt = "{avg:.4f}"}), SmoothedValue({fmt = "{avg:.4f}"})
    local width = #tostring(n)
    for a, b, c, d in iterable do
      data_time:update(time.time() - last)
      coroutine.yield(a, b, c, d)
      iter_time:update(time.time() - last)
      if i % print_freq == 0 or i == n - 1 then
        local eta = timedelta(iter_time:global_avg() * (n - i))
        local parts = {header, string.format("[%" .. width .. "d/%d]", i, n), "eta: " .. eta, tostring(self),
          "time: " .. tostring(iter_time), "data: " .. tostring(data_time)}
        if torch.cuda.is_available() then
          parts[#parts + 1] = string.format("max mem: %.0f", torch.cuda.max_memory_allocated() / (1024.0 * 1024.0))
        end
        print(table.concat(parts, self.delimiter))
      end
      i = i + 1
      last = time.time()
    end
    local total = time.time() - start_time
    print(string.format("%s Total time: %s (%.4f s / it)", header, timedelta(total), total / n))
  end)
end

-- a batch of (image, target) samples -> {images, targets} (Python's tuple(zip(*batch)))
function M.collate_fn(batch)
  local out = {}
  for j = 1, #batch[1] do
    local col = {}
    for i, sample in ipairs(batch) do col[i] = sample[j] end
    out[j] = col
  end
  return out
end

function M.mkdir(path) os.execute("mkdir -p '" .. path .. "'") end

return M
