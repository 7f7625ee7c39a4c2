-- The imagenet example's bookkeeping (pytorch/examples imagenet/main.py keeps it at the end of
-- main.py; the port keeps it here so the parity test can use it too):
--   Summary          the enum NONE, AVERAGE, SUM, COUNT (members compare by identity, as `is`)
--   AverageMeter     val / avg / sum / count of a running quantity, printed with a Python
--                    format spec such as ":6.3f" or ":.4e"
--   ProgressMeter    the "prefix[ i/n]\tName val (avg)\t..." line and the " * ..." summary
--   accuracy         top-k accuracies in percent, one 1-element tensor per k
local M = {}

local function enum(name, members)
  local E = {}
  for _, m in ipairs(members) do
    E[m[1]] = setmetatable({ name = m[1], value = m[2] }, {
      __tostring = function(self) return string.format("<%s.%s: %d>", name, self.name, self.value) end,
    })
  end
  return E
end

M.Summary = enum("Summary", { { "NONE", 0 }, { "AVERAGE", 1 }, { "SUM", 2 }, { "COUNT", 3 } })
local Summary = M.Summary

-- a number, or the value of a one-element tensor (Python formats a 0-d tensor through .item())
local function value(v)
  if torch.is_tensor(v) then return v:item() end
  return v
end

-- "{:6.3f}"-style spec (the part after the colon) -> a string.format directive
local function directive(spec)
  local d = spec:match("^:([%d.]*[fegd])$")
  if not d then error(string.format("AverageMeter: unsupported format %q (use ':[width][.precision]f|e|g')", spec), 3) end
  return "%" .. d
end

local AverageMeter = {}
AverageMeter.__index = AverageMeter
AverageMeter.__name = "AverageMeter"

-- AverageMeter(name, use_accel, fmt=":f", summary_type=Summary.AVERAGE)
function M.AverageMeter(name, use_accel, fmt, summary_type)
  local self = setmetatable({ name = name, use_accel = use_accel, fmt = fmt or ":f",
    summary_type = summary_type or Summary.AVERAGE }, AverageMeter)
  self.directive = directive(self.fmt)
  self:reset()
  return self
end

function AverageMeter:reset()
  self.val, self.avg, self.sum, self.count = 0, 0, 0, 0
end

function AverageMeter:update(val, n)
  n = n or 1
  self.val = val
  self.sum = self.sum + val * n
  self.count = self.count + n
  self.avg = self.sum / self.count
end

-- sum and count added over the ranks of the default process group
function AverageMeter:all_reduce()
  local device
  if self.use_accel then
    device = torch.accelerator.current_accelerator()
  else
    device = torch.device("cpu")
  end
  local total = torch.tensor({ value(self.sum), value(self.count) }, { dtype = torch.float32, device = device })
  torch.distributed.all_reduce(total, torch.distributed.ReduceOp.SUM, { async_op = false })
  self.sum, self.count = table.unpack(total:tolist())
  self.avg = self.sum / self.count
end

function AverageMeter:__tostring()
  local d = self.directive
  return string.format("%s " .. d .. " (" .. d .. ")", self.name, value(self.val), value(self.avg))
end

function AverageMeter:summary()
  local t = self.summary_type
  if t == Summary.NONE then
    return ""
  elseif t == Summary.AVERAGE then
    return string.format("%s %.3f", self.name, value(self.avg))
  elseif t == Summary.SUM then
    return string.format("%s %.3f", self.name, value(self.sum))
  elseif t == Summary.COUNT then
    return string.format("%s %.3f", self.name, value(self.count))
  end
  error("ValueError: invalid summary type " .. tostring(t), 2)
end

local ProgressMeter = {}
ProgressMeter.__index = ProgressMeter
ProgressMeter.__name = "ProgressMeter"

-- ProgressMeter(num_batches, meters, prefix="")
function M.ProgressMeter(num_batches, meters, prefix)
  local self = setmetatable({ meters = meters, prefix = prefix or "" }, ProgressMeter)
  self.batch_fmtstr = self:_get_batch_fmtstr(num_batches)
  return self
end

function ProgressMeter:display(batch)
  local entries = { self.prefix .. string.format(self.batch_fmtstr, batch) }
  for _, meter in ipairs(self.meters) do entries[#entries + 1] = tostring(meter) end
  print(table.concat(entries, "\t"))
end

function ProgressMeter:display_summary()
  local entries = { " *" }
  for _, meter in ipairs(self.meters) do entries[#entries + 1] = meter:summary() end
  print(table.concat(entries, " "))
end

-- "[%3d/100]": the batch number as wide as the count
function ProgressMeter:_get_batch_fmtstr(num_batches)
  local n = math.tointeger(num_batches) or error("ProgressMeter: num_batches must be an integer", 3)
  return "[%" .. #tostring(n) .. "d/" .. n .. "]"
end

-- accuracy(output, target, topk={1}): for each k, the percentage of rows of output whose k
-- largest scores include the target class, as a 1-element float tensor; one result per k.
function M.accuracy(output, target, topk)
  topk = topk or { 1 }
  local _ <close> = torch.no_grad()
  local maxk = math.max(table.unpack(topk))
  local batch_size = target:size(0)

  local _, pred = output:topk(maxk, 1, true, true)
  pred = pred:t()
  local correct = pred:eq(target:view(1, -1):expand_as(pred))

  local res = {}
  for _, k in ipairs(topk) do
    local correct_k = correct[":" .. k]:reshape(-1):float():sum(0, true)
    res[#res + 1] = correct_k:mul_(100.0 / batch_size)
  end
  return table.unpack(res)
end

return M
